/**
 * The request log of every platform server (DESIGN §5): one JSON line per request, and what a
 * failure's line names of its request. Logged URLs have their credentials redacted (lib/redact.ts).
 */
import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { redactUrl } from './redact.js';

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
  /**
   * A streamed answer that ended early: when the client went away (its connection closed, which
   * destroys the stream being sent: a proxied body from undici then ends with UND_ERR_ABORTED),
   * that is the client's abort, one info line, not Fastify's warning that a response "terminated
   * with an error".
   */
  override streamError(error: Error & { code?: string }, request: FastifyRequest, reply: FastifyReply) {
    if (isClientAbort(error, reply)) {
      reply.log.info(
        { ...this.completedLine(request, reply), code: error.code },
        'client went away before the response was complete',
      );
      return;
    }
    super.streamError(error, request, reply);
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

/**
 * Whether an error is the client's abort: the client is gone (its request or our response to it
 * destroyed) and the error is undici's UND_ERR_ABORTED, how a body we were streaming from a peer
 * ends when we destroy it because nobody reads it any more.
 */
export function isClientAbort(error: { code?: string }, reply: FastifyReply): boolean {
  return error.code === 'UND_ERR_ABORTED' && (reply.request.raw.destroyed || reply.raw.destroyed);
}

/** What a failure's log line names of its request: method, route pattern (else the redacted path) and request id. */
export function failureContext(req: FastifyRequest): { method: string; route: string; requestId: string } {
  return { method: req.method, route: req.routeOptions?.url ?? redactUrl(req.url.split('?')[0]!), requestId: req.id };
}
