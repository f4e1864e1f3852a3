/** OpenAPI 3.1 generated from the route schemas; Swagger UI at /docs, the document at /docs/json. */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

export const openapi = fp(
  async (app: FastifyInstance) => {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Plana account API',
          version: '0.1.0',
          description:
            'The Workspace API (Authorization: Bearer ws_live_…), interactive login, and the internal ops API (X-API-Key). ' +
            'Errors are RFC 9457 problem details (application/problem+json). Text is UTF-8 without NUL characters or lone surrogates; ' +
            'request bodies are at most 256 KiB, path segments at most 100 characters, the request line and headers at most 16 KiB.',
        },
        components: {
          securitySchemes: {
            opsKey: {
              type: 'apiKey',
              in: 'header',
              name: 'X-API-Key',
              description: 'the operator service key (operator → account-api in the service-key registry)',
            },
            provisioningKey: {
              type: 'apiKey',
              in: 'header',
              name: 'X-API-Key',
              description: 'the provisioning webhook service key',
            },
            erpKey: {
              type: 'apiKey',
              in: 'header',
              name: 'X-API-Key',
              description: "the tenant ERPs' SaaS endpoint key (erp → account-api)",
            },
            saasJobsKey: {
              type: 'apiKey',
              in: 'header',
              name: 'X-API-Key',
              description:
                "the key of platform jobs posting the tenant ERPs' legacy callbacks (saas-jobs → account-api)",
            },
            workspaceKey: { type: 'http', scheme: 'bearer', description: 'ws_live_… workspace API key' },
            userToken: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'JWT',
              description: 'access token from POST /api/auth/login',
            },
          },
        },
      },
    });
    await app.register(swaggerUi, { routePrefix: '/docs' });
  },
  { name: 'openapi' },
);
