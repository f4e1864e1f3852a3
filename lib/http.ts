/**
 * What every Fastify server of the platform shares: request ids, one JSON log line per request,
 * and one error handler that turns every error into an RFC 9457 problem body (5xx detail masked).
 */
import { randomUUID } from 'node:crypto';
import { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import fp from 'fastify-plugin';
import { AppError, codeForStatus, problem, type ErrorCode } from './errors.js';
import { redactPaths } from './logger.js';

/**
 * One JSON log line per request (DESIGN §5): the "incoming request" line only at debug level, and
 * the "request completed" line carrying method, URL, status and latency. A server extends it to
 * add fields to that line (the account API: the workspace, key prefix and route of a Workspace API
 * call, api/plugins/workspace-auth.ts).
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(request: FastifyRequest) {
    request.log.debug({ req: request }, 'incoming request');
  }
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    const line = this.completedLine(request, reply);
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
  protected completedLine(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
    return { req: { method: request.method, url: request.url }, res: { statusCode: reply.statusCode }, responseTime: reply.elapsedTime };
  }
}

export function serverOptions(logLevel: string, logController: LogController = new OneLinePerRequest()): FastifyServerOptions {
  return {
    logController,
    logger: {
      level: logLevel,
      redact: { paths: redactPaths, censor: '[redacted]' },
    },
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    ajv: { customOptions: { allErrors: true, removeAdditional: false, coerceTypes: 'array', useDefaults: true } },
  };
}

export function sendProblem(reply: FastifyReply, code: ErrorCode, detail: string, extra: Record<string, unknown> = {}) {
  return reply
    .code(problem(code, detail).status)
    .type('application/problem+json')
    .send(problem(code, detail, { requestId: reply.request.id, instance: reply.request.url.split('?')[0], ...extra }));
}

function validationDetail(err: FastifyError): { detail: string; errors: { field: string; message: string }[] } {
  const errors = (err.validation ?? []).map((v) => {
    const missing = (v.params as { missingProperty?: string } | undefined)?.missingProperty;
    const additional = (v.params as { additionalProperty?: string } | undefined)?.additionalProperty;
    const where = `${err.validationContext ?? 'body'}${v.instancePath.replace(/\//g, '.')}${missing ? `.${missing}` : ''}`;
    const message = v.message ?? 'is invalid';
    return { field: where, message: additional ? `${message} (${additional})` : message };
  });
  return { detail: errors.map((e) => `${e.field} ${e.message}`).join('; ') || err.message, errors };
}

export const problemDetails = fp(
  async (app: FastifyInstance) => {
    app.addHook('onSend', async (req, reply) => {
      reply.header('x-request-id', req.id);
    });

    app.setErrorHandler((err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
      if (err instanceof AppError) {
        if (err.status >= 500) req.log.error({ err }, err.message);
        return sendProblem(reply, err.code, err.message, err.extra);
      }
      if (err.validation) {
        const { detail, errors } = validationDetail(err);
        return sendProblem(reply, 'BAD_REQUEST', detail, { errors });
      }
      const status = err.statusCode ?? 500;
      if (status >= 500) {
        req.log.error({ err }, 'request failed');
        return sendProblem(reply, codeForStatus(status), 'An unexpected error occurred. Quote the requestId when reporting it.');
      }
      // Fastify's own 4xx (bad JSON, wrong content type, body too large, ...): their messages are safe.
      return sendProblem(reply, codeForStatus(status), err.message);
    });

    app.setNotFoundHandler((req, reply) =>
      sendProblem(reply, 'NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}`),
    );
  },
  { name: 'problem-details' },
);
