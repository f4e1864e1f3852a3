/**
 * The workspace's execution log (specification §5.2 rule 4): every call made with one of its keys,
 * newest first, for admins of the workspace logged in interactively. Keyset pagination: pass the
 * `nextCursor` of a page as `cursor` to get the next one (with the same filters).
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { readExecutionLog } from '../../../domain/access/execution-log.js';
import { ExecutionLogCall, TenantName, Text } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';
import { AppError } from '../../../lib/errors.js';

// no call is older than the epoch or later than year 9999: clamping keeps every valid RFC 3339
// time (year 0000, odd offsets) within what PostgreSQL takes, with the same answer
const EARLIEST = Date.UTC(1970, 0, 1);
const LATEST = Date.UTC(9999, 11, 31);
function instant(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms))
    throw new AppError(
      'BAD_REQUEST',
      `${name} is not a time this API understands; use ISO 8601, e.g. 2026-01-31T12:00:00Z.`,
    );
  return new Date(Math.min(LATEST, Math.max(EARLIEST, ms))).toISOString();
}

export default async function executionLogRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.get(
    '/api/portal/execution-log',
    {
      config: { access: access.admin },
      schema: {
        tags: ['apikeys'],
        summary: "The workspace's execution log: calls made with its API keys (90-day retention)",
        querystring: Type.Object({
          workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
          cursor: Type.Optional(Text({ maxLength: 200 })),
          keyPrefix: Type.Optional(
            Text({ minLength: 1, maxLength: 40, description: 'keys whose prefix starts with this, e.g. ws_live_ABCD' }),
          ),
          route: Type.Optional(
            Text({ minLength: 1, maxLength: 200, description: 'routes containing this, e.g. /kpis' }),
          ),
          status: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
          since: Type.Optional(Type.String({ format: 'date-time', description: 'calls at or after this time' })),
          until: Type.Optional(Type.String({ format: 'date-time', description: 'calls before this time' })),
        }),
        response: {
          200: Type.Object({
            items: Type.Array(ExecutionLogCall),
            nextCursor: Type.Union([Type.String(), Type.Null()]),
          }),
          400: Type.Ref('Problem'),
          401: Type.Ref('Problem'),
          403: Type.Ref('Problem'),
        },
      },
    },
    async (req) => {
      // rows still buffered in this process are written first, so an admin sees their latest calls
      await app.workspaceAuth.executionLog.flush();
      const { limit, cursor, keyPrefix, route, status } = req.query;
      const since = instant(req.query.since, 'since');
      const until = instant(req.query.until, 'until');
      return readExecutionLog(app.deps.pool, req.adminWorkspace!.id, {
        limit: limit ?? 50,
        cursor,
        keyPrefix,
        route,
        status,
        since,
        until,
        secretsKey: app.deps.config.SECRETS_KEY,
      });
    },
  );
}
