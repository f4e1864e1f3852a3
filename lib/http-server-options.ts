/**
 * The Fastify options every platform server starts with: request ids, the request log, limits, the
 * validators, and the problems answered before a route runs: by the router (malformed
 * percent-encoding 400, a path parameter over the limit 414: `frameworkErrors`) and by Node's HTTP
 * parser before Fastify sees a request (malformed request line or header 400, headers too large
 * 431, timeout 408: `clientErrorHandler`, written raw to the socket).
 */
import { randomFillSync } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions, LogController } from 'fastify';
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { DestinationStream } from 'pino';
import { problem, type ErrorCode } from './errors.js';
import { BODY_LIMIT, MAX_PARAM_LENGTH } from './http-limits.js';
import { sendProblem } from './http-problems.js';
import { failureContext, OneLinePerRequest } from './http-request-log.js';
import { logDestination } from './log-shipper.js';
import { serializers, serverRedactPaths } from './logger.js';
import { tracedServerFactory } from './http-tracing.js';
import { activeTraceId } from './tracing.js';

const TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/;
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * A request's id is its trace id (32 lowercase hex), so a problem body or a log line leads to the
 * trace: the id of the request's span (lib/http-tracing.ts) while tracing is on; otherwise the
 * trace id of the caller's `traceparent`, or its `X-Request-Id` when that has a trace id's shape
 * (the account API passes its own on to the agents service); else a new one of that shape.
 */
export function requestIdOf(headers: Record<string, string | string[] | undefined>): string {
  const traced = activeTraceId();
  if (traced) return traced;
  const parent = typeof headers.traceparent === 'string' ? TRACEPARENT.exec(headers.traceparent)?.[1] : undefined;
  if (parent && TRACE_ID.test(parent)) return parent;
  const given = headers['x-request-id'];
  return typeof given === 'string' && TRACE_ID.test(given) ? given : newRequestId();
}

/** Random bytes drawn 4 KiB at a time: an id is a slice of them (randomBytes(16) per id took about 8 µs here). */
const randomPool = Buffer.alloc(4096);
let poolUsed = randomPool.length;

/** A new id in a trace id's shape (32 lowercase hex). */
export function newRequestId(): string {
  if (poolUsed === randomPool.length) {
    randomFillSync(randomPool);
    poolUsed = 0;
  }
  const id = randomPool.toString('hex', poolUsed, poolUsed + 16);
  poolUsed += 16;
  return id;
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
  /** Where the log lines go (default standard output, and the log store when LOG_STORE_URL is set); tests read them here. */
  stream?: DestinationStream;
  /** The server's name on its lines in the log store (their stream). */
  service?: string;
}

export function serverOptions(
  logLevel: string,
  { logController = new OneLinePerRequest(), stream, service = 'platform' }: LogOptions = {},
): FastifyServerOptions {
  const destination = stream ?? logDestination(service);
  return {
    logController,
    logger: {
      level: logLevel,
      ...(destination ? { stream: destination } : {}),
      redact: { paths: serverRedactPaths, censor: '[redacted]' },
      // Fastify's type wants message and stack on an error line: the platform's lines leave them out
      serializers: serializers as unknown as NonNullable<
        Exclude<FastifyServerOptions['logger'], boolean | undefined>
      >['serializers'],
    },
    genReqId: (req) => requestIdOf(req.headers),
    serverFactory: tracedServerFactory(),
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
    frameworkErrors: refuseBadPath,
    clientErrorHandler: refuseMalformedRequest,
  };
}

/** The router refused the path before any route ran: malformed percent-encoding 400, a path parameter over the limit 414. */
function refuseBadPath(err: { code: string }, req: FastifyRequest, reply: FastifyReply) {
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
  const requestId = newRequestId();
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
