/**
 * What every Fastify server of the platform shares (the account API and the internal services):
 * request ids, one JSON log line per request, the text the platform accepts, and ONE place that
 * turns every error into an RFC 9457 problem (`application/problem+json` with `type`, `title`,
 * `status`, `detail`, `code`, `requestId`), whoever raises it:
 *
 * - the routes (AppError), schema validation, the content-type parsers (400 bad JSON, 413 too
 *   large, 415 wrong type) and a dependency outage (503 naming PostgreSQL, Redis or Temporal):
 *   `setErrorHandler`;
 * - the router before any route runs (malformed percent-encoding 400, a path parameter over the
 *   limit 414): `frameworkErrors`;
 * - no route: 404, or 405 with `Allow` when the path exists for other methods: `setNotFoundHandler`;
 * - Node's HTTP parser, before Fastify sees a request (malformed request line or header 400,
 *   headers too large 431, timeout 408): `clientErrorHandler`, written raw to the socket;
 * - a request arriving while the server closes: 503; one in flight then closes its connection after its answer.
 *
 * 5xx details are masked in the answer. The log (DESIGN §5): an unexpected error (5xx) is one
 * "request failed" line with the error's name, message, stack and causes (credentials and e-mail
 * addresses redacted, lib/logger.ts `errorSerializer`) and the request's method, route pattern and
 * request id; an expected refusal (4xx) is the request's one "request completed" line, without a
 * stack. Logged URLs have their credentials redacted (lib/redact.ts).
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  type RouteOptions,
} from 'fastify';
import fp from 'fastify-plugin';
import { AjvCompiler } from '@fastify/ajv-compiler';
import { AppError, codeForStatus, problem, unavailableDependency, type ErrorCode } from './errors.js';
import { redactPaths, serializers } from './logger.js';
import { redactUrl } from './redact.js';
import { describeValidation, type FieldProblem, type ValidationIssue } from './validation-messages.js';
import type { DestinationStream } from 'pino';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The body types a route takes when more than application/json (its 415 names them). */
    contentTypes?: string[];
  }
}

/** The largest request body any platform server reads (a route may set less). */
export const BODY_LIMIT = 256 * 1024;
/** The longest path parameter (a uuid is 36, a tenant name 30); longer → 414. */
export const MAX_PARAM_LENGTH = 100;
/** How deep a JSON body may nest: deeper → 400 before any handler walks it. */
export const MAX_DEPTH = 32;

/**
 * One JSON log line per request (DESIGN §5): the "incoming request" line only at debug level, and
 * the "request completed" line carrying method, URL, status and latency. A server extends it to
 * add fields to that line (the account API: the workspace, key prefix and route of a Workspace API
 * call, api/plugins/workspace-auth.ts).
 */
export class OneLinePerRequest extends LogController {
  override incomingRequest(request: FastifyRequest) {
    request.log.debug({ req: { method: request.method, url: request.url } }, 'incoming request');
  }
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    const line = this.completedLine(request, reply);
    if (error) reply.log.error({ ...line, ...failureContext(request), err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
  protected completedLine(request: FastifyRequest, reply: FastifyReply): Record<string, unknown> {
    // the `req` serializer (lib/logger.ts) redacts the URL's credentials
    const line: Record<string, unknown> = {
      req: { method: request.method, url: request.url },
      res: { statusCode: reply.statusCode },
      responseTime: reply.elapsedTime,
    };
    // an internal call: who called with which key id (set by the service-key check; never the key)
    const caller = (request as { serviceCaller?: { caller: string; keyId: string } }).serviceCaller;
    if (caller) {
      line.serviceCaller = caller.caller;
      line.keyId = caller.keyId;
    }
    return line;
  }
}

/** What a failure's log line names of its request: method, route pattern (else the redacted path) and request id. */
export function failureContext(req: FastifyRequest): { method: string; route: string; requestId: string } {
  return { method: req.method, route: req.routeOptions?.url ?? redactUrl(req.url.split('?')[0]!), requestId: req.id };
}

function requestIdOf(headers: Record<string, string | string[] | undefined>): string {
  const given = headers['x-request-id'];
  return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
}

/**
 * Fastify's validator, twice: query strings, path parameters and headers are text, so their
 * values are coerced to the schema's types (`?limit=50`); a JSON body already has types, and a
 * number where the document says string is refused rather than turned into one.
 */
const validatorsFromPool = AjvCompiler();
function buildValidator(externalSchemas: unknown, options: { customOptions?: Record<string, unknown> } | undefined) {
  const coercing = validatorsFromPool(externalSchemas as never, options as never);
  const exact = validatorsFromPool(
    externalSchemas as never,
    { ...options, customOptions: { ...options?.customOptions, coerceTypes: false } } as never,
  );
  return (route: { httpPart?: string }) => (route.httpPart === 'body' ? exact : coercing)(route as never);
}

export interface LogOptions {
  /** The request log (default OneLinePerRequest). */
  logController?: LogController;
  /** Where the log lines go (default standard output); tests read them here. */
  stream?: DestinationStream;
}

export function serverOptions(
  logLevel: string,
  { logController = new OneLinePerRequest(), stream }: LogOptions = {},
): FastifyServerOptions {
  return {
    logController,
    logger: {
      level: logLevel,
      ...(stream ? { stream } : {}),
      redact: { paths: redactPaths, censor: '[redacted]' },
      // Fastify's type wants message and stack on an error line: the platform's lines leave them out
      serializers: serializers as unknown as NonNullable<
        Exclude<FastifyServerOptions['logger'], boolean | undefined>
      >['serializers'],
    },
    genReqId: (req) => requestIdOf(req.headers),
    requestIdHeader: false,
    bodyLimit: BODY_LIMIT,
    schemaController: { compilersFactory: { buildValidator: buildValidator as never } },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // a request arriving while the server closes gets a 503 problem from the hook below
    return503OnClosing: false,
    // verbose: an error carries the value it is about, so "must be one of …" can say what came instead
    ajv: {
      customOptions: {
        allErrors: true,
        removeAdditional: false,
        coerceTypes: 'array',
        useDefaults: true,
        verbose: true,
      },
    },
    frameworkErrors: (err, req, reply) => {
      const known: Record<string, [ErrorCode, string]> = {
        FST_ERR_BAD_URL: [
          'BAD_REQUEST',
          'The URL path is not valid: a percent-encoded sequence is malformed or not UTF-8.',
        ],
        FST_ERR_MAX_PARAM_LENGTH: ['URI_TOO_LONG', `A path segment is longer than ${MAX_PARAM_LENGTH} characters.`],
      };
      const [code, detail] = known[err.code] ?? [
        'INTERNAL',
        'An unexpected error occurred. Quote the requestId when reporting it.',
      ];
      if (code === 'INTERNAL') req.log.error({ ...failureContext(req), err }, 'router error');
      return sendProblem(reply, code, detail);
    },
    clientErrorHandler: refuseMalformedRequest,
  };
}

/**
 * Node's HTTP parser refused the request (or it timed out) before Fastify saw it: answer a
 * problem on the raw socket and close it. ECONNRESET: the peer is gone, nothing to answer.
 */
function refuseMalformedRequest(
  this: FastifyInstance,
  err: NodeJS.ErrnoException & { bytesParsed?: number },
  socket: Socket,
) {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [code, detail]: [ErrorCode, string] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? ['HEADERS_TOO_LARGE', 'The request line and headers are larger than the server accepts (16 KiB).']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? ['REQUEST_TIMEOUT', 'The request was not received in time.']
        : ['BAD_REQUEST', 'The request is not valid HTTP/1.1 (malformed request line, header or framing).'];
  const requestId = randomUUID();
  // an expected refusal: its code, no stack
  this.log.info({ code: err.code, requestId }, 'malformed request refused');
  if (socket.writable) {
    const body = JSON.stringify(problem(code, detail, { requestId }));
    const status = problem(code, detail).status;
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

export function sendProblem(reply: FastifyReply, code: ErrorCode, detail: string, extra: Record<string, unknown> = {}) {
  const body = problem(code, detail, {
    requestId: reply.request.id,
    instance: reply.request.url.split('?')[0],
    ...extra,
  });
  return reply.code(body.status).header('x-request-id', reply.request.id).type('application/problem+json').send(body);
}

/**
 * The liveness and readiness probes of a platform service: `/healthz` answers while the process
 * runs; `/readyz` pings its one dependency and answers 503 naming it when it does not answer.
 */
export function registerProbes(app: FastifyInstance, dependency: { name: string; ping: () => Promise<unknown> }) {
  const Probe = { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } as const;
  app.get('/healthz', { schema: { response: { 200: Probe } } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { response: { 200: Probe } } }, async (req, reply) => {
    try {
      await dependency.ping();
      return { status: 'ready' };
    } catch (err) {
      req.log.warn({ err: (err as Error).message }, `${dependency.name} not reachable`);
      return sendProblem(reply, 'UNAVAILABLE', `Not ready: ${dependency.name} not reachable.`, {
        failing: [dependency.name],
      });
    }
  });
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

// ---------------------------------------------------------------------------------------------
// The text the platform accepts

/** String.prototype.isWellFormed (ES2024, Node 20), not in this project's TypeScript lib. */
type WellFormedString = string & { isWellFormed(): boolean };

/** Why `s` is not text the platform accepts, or undefined when it is. */
export function textProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'contains a NUL character (U+0000), which is not accepted in text';
  // a lone UTF-16 surrogate is not text, and not encodable as UTF-8 (PostgreSQL cannot store it)
  if (!(s as WellFormedString).isWellFormed()) return 'contains a lone UTF-16 surrogate, which is not text';
  return undefined;
}

/**
 * The JSON-schema form of the rule, for route schemas (so the OpenAPI document says it): no NUL.
 * Lone surrogates are not Unicode text, which a JSON-schema string is, so the pattern leaves them
 * out (and a range of surrogates would be a pattern other tools cannot compile); the check above
 * refuses them all the same.
 */
export const SAFE_TEXT_PATTERN = '^[^\\u0000]*$';

interface TextIssue {
  field: string;
  message: string;
}

/**
 * The first string (or key) of a parsed value that is not text, with its path. Recursion is
 * bounded by MAX_DEPTH; the path is built only for the value that fails, so a request whose text
 * is fine (every request but the rare hostile one) allocates nothing here.
 */
function findTextIssue(value: unknown, where: string): TextIssue | undefined {
  const found = issueIn(value, 0);
  return (
    found && { field: [where, ...found.path].join('.').replace(/\.\(a key\)$/, ' (a key)'), message: found.message }
  );
}

function issueIn(value: unknown, depth: number): { path: string[]; message: string } | undefined {
  if (typeof value === 'string') {
    const message = textProblem(value);
    return message ? { path: [], message } : undefined;
  }
  if (!value || typeof value !== 'object') return undefined;
  if (depth >= MAX_DEPTH) return { path: [], message: `nests deeper than ${MAX_DEPTH} levels` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = issueIn(value[i], depth + 1);
      if (found) return (found.path.unshift(String(i)), found);
    }
    return undefined;
  }
  for (const key in value) {
    const message = textProblem(key);
    // the key itself is not echoed: it is what is wrong
    if (message) return { path: ['(a key)'], message };
    const found = issueIn((value as Record<string, unknown>)[key], depth + 1);
    if (found) return (found.path.unshift(key), found);
  }
  return undefined;
}

/** Refuses, with 400, a request whose params, query, headers or body hold text the platform does not accept. */
function checkText(req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) {
  const issue =
    findTextIssue(req.params, 'params') ??
    findTextIssue(req.query, 'query') ??
    findTextIssue(req.headers, 'headers') ??
    findTextIssue(req.body, 'body');
  if (!issue) return done();
  void sendProblem(reply, 'BAD_REQUEST', `${issue.field} ${issue.message}.`, { errors: [issue] });
}

// ---------------------------------------------------------------------------------------------
// 405: which methods a path has

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'QUERY'];

function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}$`);
}

/** application/json that may be empty: a bodiless request with this content type has no body (undefined). */
export function jsonParser(app: FastifyInstance) {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (req: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    return parse(req, text, done);
  };
}

export const problemDetails = fp(
  async (app: FastifyInstance) => {
    let closing = false;
    app.addHook('preClose', (done) => {
      closing = true;
      done();
    });
    // A route with parameters can shadow a more specific resource for other methods: DELETE
    // /apikeys/self reaches DELETE /apikeys/:id, yet /apikeys/self is a resource of its own with
    // GET only, so that is a 405. Per route, the more specific resources it overlaps are found
    // once; most routes have none and pay one map look-up.
    const shadowed = new Map<string, Resource[]>();
    const sampleOf = (url: string) => url.replace(/:[^/]+/g, 'x').replace('*', 'x');
    function shadowedBy(url: string): Resource[] {
      let found = shadowed.get(url);
      if (!found) {
        const own = patternOf(url);
        const mine = routes.find((r) => r.pattern.source === own.source);
        found = routes.filter(
          (r) => r !== mine && r.staticSegments > (mine?.staticSegments ?? 0) && own.test(sampleOf(r.url)),
        );
        shadowed.set(url, found);
      }
      return found;
    }
    app.addHook('onRequest', (req, reply, done) => {
      if (closing) {
        reply.header('connection', 'close');
        return void sendProblem(reply, 'UNAVAILABLE', 'The server is shutting down; retry on another replica.');
      }
      const url = req.routeOptions.url;
      if (!url || !url.includes(':')) return done();
      const shadows = shadowedBy(url);
      if (shadows.length === 0) return done();
      const path = req.url.split('?')[0]!;
      const resource = shadows.find((r) => r.pattern.test(path));
      if (!resource || resource.methods.has(req.method)) return done();
      return void methodNotAllowed(reply, req.method, path, new Set(resource.methods));
    });
    app.addHook('onSend', async (req, reply) => {
      reply.header('x-request-id', req.id);
      // a request in flight when the close began ends its connection too: a keep-alive connection
      // left open would hold the close for the keep-alive timeout (72 s), and the usage flush after it
      if (closing) reply.header('connection', 'close');
    });
    app.addHook('preValidation', checkText);

    // JSON only (a route may add its own types, as the TenantClient apply adds YAML): a body of
    // any other type is a 415, not a string that then fails validation
    app.removeContentTypeParser(['application/json', 'text/plain']);
    app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonParser(app));

    // the resources (route patterns) and their methods; the most specific pattern matching a path
    // is its resource, as for the router (`/apikeys/self` is not `/apikeys/:id`)
    type Resource = { url: string; pattern: RegExp; staticSegments: number; methods: Set<string> };
    const routes: Resource[] = [];
    app.addHook('onRoute', (route: RouteOptions) => {
      const methods = [route.method].flat().map((m) => m.toUpperCase());
      const pattern = patternOf(route.url);
      let entry = routes.find((r) => r.pattern.source === pattern.source);
      if (!entry) {
        const segments = route.url.split('/').filter(Boolean);
        const staticSegments =
          segments.filter((s) => !s.startsWith(':') && s !== '*').length - (segments.includes('*') ? 0.5 : 0);
        routes.push((entry = { url: route.url, pattern, staticSegments, methods: new Set() }));
      }
      for (const m of methods) entry.methods.add(m);
    });

    // an error on the way to "no route" (e.g. a body-less QUERY lacking a content type) is still "no route"
    app.setErrorHandler((err: FastifyError, req, reply) =>
      req.is404 ? notFound(req, reply) : handleError(err, req, reply),
    );
    app.setNotFoundHandler(notFound);

    function notFound(req: FastifyRequest, reply: FastifyReply) {
      const path = req.url.split('?')[0]!;
      const matching = routes.filter((r) => r.pattern.test(path));
      const best = Math.max(-1, ...matching.map((r) => r.staticSegments));
      const allowed = new Set<string>();
      for (const r of matching) if (r.staticSegments === best) for (const m of r.methods) allowed.add(m);
      if (allowed.size > 0 && !allowed.has(req.method)) return methodNotAllowed(reply, req.method, path, allowed);
      return sendProblem(reply, 'NOT_FOUND', `No route ${req.method} ${path}`);
    }

    function methodNotAllowed(reply: FastifyReply, method: string, path: string, allowed: Set<string>) {
      if (allowed.has('GET')) allowed.add('HEAD');
      const allow = METHODS.filter((m) => allowed.has(m)).join(', ');
      reply.header('allow', allow);
      return sendProblem(reply, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; allowed: ${allow}.`);
    }
  },
  { name: 'problem-details' },
);
