/**
 * RFC 9457 problems (`application/problem+json` with `type`, `title`, `status`, `detail`, `code`,
 * `requestId`): `sendProblem` answers one, `handleError` is the one error handler of every platform
 * server (AppError, schema validation, the content-type parsers, a dependency outage). 5xx details
 * are masked in the answer and logged as one "request failed" line (lib/http-request-log.ts).
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, codeForStatus, problem, unavailableDependency, type ErrorCode } from './errors.js';
import { BODY_LIMIT } from './http-limits.js';
import { failureContext } from './http-request-log.js';
import { describeValidation, type FieldProblem, type ValidationIssue } from './validation-messages.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The body types a route takes when more than application/json (its 415 names them). */
    contentTypes?: string[];
  }
}

export function sendProblem(reply: FastifyReply, code: ErrorCode, detail: string, extra: Record<string, unknown> = {}) {
  const body = problem(code, detail, {
    requestId: reply.request.id,
    instance: reply.request.url.split('?')[0],
    ...extra,
  });
  return reply.code(body.status).header('x-request-id', reply.request.id).type('application/problem+json').send(body);
}

function validationDetail(err: FastifyError): { detail: string; errors: FieldProblem[] } {
  // the caller's word for the part: Fastify's "querystring" is the URL's query
  const part = err.validationContext === 'querystring' ? 'query' : (err.validationContext ?? 'body');
  const errors = describeValidation((err.validation ?? []) as unknown as ValidationIssue[], part);
  return { detail: errors.map((e) => `${e.field} ${e.message}.`).join(' ') || err.message, errors };
}

/** Fastify's own 4xx errors, in words that do not echo the request (V8's JSON errors quote the body). */
function frameworkDetail(err: FastifyError, req: FastifyRequest): string {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `The request body is larger than this endpoint accepts (${Math.floor((req.routeOptions.bodyLimit ?? BODY_LIMIT) / 1024)} KiB).`;
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': {
      // a route that takes more than JSON lists its types in `config.contentTypes`
      const accepted = req.routeOptions.config?.contentTypes ?? ['application/json'];
      return `This endpoint does not accept the content type "${String(req.headers['content-type'] ?? '').slice(0, 100)}"; it accepts ${accepted.join(', ')}.`;
    }
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return 'The Content-Length header does not match the body.';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'The body is not valid JSON.';
  }
  if (err.name === 'SyntaxError' || err instanceof SyntaxError) return 'The body is not valid JSON.';
  if (typeof err.code === 'string' && err.code.startsWith('FST_')) return err.message;
  return STATUS_CODES[err.statusCode ?? 400] ?? 'The request is not valid.';
}

/** The one error handler of every platform server. */
export function handleError(err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  if (err instanceof AppError) {
    if (err.status >= 500) req.log.error({ ...failureContext(req), statusCode: err.status, err }, 'request failed');
    return sendProblem(reply, err.code, err.message, err.extra);
  }
  if (err.validation) {
    const { detail, errors } = validationDetail(err);
    return sendProblem(reply, 'BAD_REQUEST', detail, { errors });
  }
  const part = unavailableDependency(err);
  if (part) {
    req.log.warn({ ...failureContext(req), statusCode: 503, err, dependency: part }, 'dependency unavailable');
    reply.header('retry-after', '5');
    return sendProblem(reply, 'UNAVAILABLE', `${part} is unavailable; retry shortly.`, { dependency: part });
  }
  const status = err.statusCode ?? 500;
  if (status < 400 || status >= 500) {
    req.log.error({ ...failureContext(req), statusCode: status >= 500 ? status : 500, err }, 'request failed');
    return sendProblem(
      reply,
      status >= 500 ? codeForStatus(status) : 'INTERNAL',
      'An unexpected error occurred. Quote the requestId when reporting it.',
    );
  }
  return sendProblem(reply, codeForStatus(status), frameworkDetail(err, req));
}
