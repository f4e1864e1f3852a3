/**
 * One HTTP attempt of a webhook: POST through an undici Agent (one keep-alive pool per origin)
 * whose sockets resolve names with a `lookup` that refuses forbidden addresses (addresses.ts), so
 * the address checked is the one the socket connects to; a literal address in the URL (no lookup
 * happens) is checked here. Redirects are never followed (undici's `request` does not follow them;
 * a 3xx is a failure). The result names its outcome, a subset of the response headers and a
 * bounded body excerpt.
 */
import { isIP } from 'node:net';
import { Agent, errors, type Dispatcher } from 'undici';
import type { AddressPolicy } from './addresses.js';

export type Outcome = 'ok' | 'gone' | 'redirect' | 'http-status' | 'timeout' | 'connection' | 'forbidden-address';

export interface AttemptResult {
  outcome: Outcome;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** A subset of the response headers (RECORDED_HEADERS). */
  headers: Record<string, string>;
  /** The first EXCERPT_BYTES of the response body. */
  excerpt: string;
  /** The receiver's Retry-After, in ms (429 / 503), when it sent a valid one. */
  retryAfterMs: number | null;
}

export const RECORDED_HEADERS = ['content-type', 'content-length', 'retry-after', 'location', 'date', 'server'];
export const EXCERPT_BYTES = 1024;
/** A response body longer than this is not read further (the connection is dropped). */
const MAX_READ_BYTES = 64 * 1024;

/** Retry-After: seconds or an HTTP date, as ms from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

class AttemptTimeout extends Error {
  override name = 'AttemptTimeout';
}

export class WebhookSender {
  private readonly agent: Agent;

  constructor(
    private readonly opts: {
      policy: AddressPolicy;
      timeoutMs: number;
      dnsServers?: string[];
      maxSocketsPerHost?: number;
    },
  ) {
    const lookup = opts.policy.guardedLookup(opts.dnsServers);
    this.agent = new Agent({
      connections: opts.maxSocketsPerHost ?? 64,
      keepAliveTimeout: 30_000,
      // the connect options reach net.connect / tls.connect: the socket resolves through the guarded lookup
      connect: { lookup: lookup as never, noDelay: true, timeout: opts.timeoutMs },
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
  }

  async send(rawUrl: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const done = (r: Partial<AttemptResult> & { outcome: Outcome }): AttemptResult => ({
      statusCode: null,
      error: null,
      headers: {},
      excerpt: '',
      retryAfterMs: null,
      durationMs: Math.round(performance.now() - started),
      ...r,
    });
    const target = this.checkedTarget(rawUrl);
    if (!(target instanceof URL)) return done(target);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new AttemptTimeout()), this.opts.timeoutMs);
    try {
      const res = await this.agent.request({
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        headers,
        body,
        signal: abort.signal,
      });
      return done(await readAnswer(res));
    } catch (e) {
      return done(this.failure(e, abort.signal.aborted));
    } finally {
      clearTimeout(timer);
    }
  }

  /** The URL to POST to, or why no attempt is made (not http(s), a forbidden literal address). */
  private checkedTarget(rawUrl: string): URL | { outcome: Outcome; error: string } {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      return { outcome: 'connection', error: 'invalid URL' };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      return { outcome: 'connection', error: `unsupported scheme ${url.protocol}` };
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const why = this.opts.policy.refusal(host);
      if (why) return { outcome: 'forbidden-address', error: `refused to connect: ${why}` };
    }
    return url;
  }

  /** A request that got no answer: timed out, refused by the address policy, or a connection error. */
  private failure(e: unknown, aborted: boolean): { outcome: Outcome; error: string } {
    const err = (e instanceof Error ? e : new Error(String(e))) as Error & { code?: string; cause?: unknown };
    if (
      aborted ||
      err instanceof errors.HeadersTimeoutError ||
      err instanceof errors.BodyTimeoutError ||
      err instanceof errors.ConnectTimeoutError
    ) {
      return { outcome: 'timeout', error: `no answer within ${this.opts.timeoutMs} ms` };
    }
    const forbidden = [err, err.cause].find(
      (x): x is Error => x instanceof Error && x.name === 'ForbiddenAddressError',
    );
    if (forbidden) return { outcome: 'forbidden-address', error: `refused to connect: ${forbidden.message}` };
    return { outcome: 'connection', error: `${err.code ?? 'error'}: ${err.message}` };
  }

  close() {
    void this.agent.destroy().catch(() => {});
  }
}

type Answer = Dispatcher.ResponseData;

/** An answer's outcome by its status: 2xx ok, 410 gone, 3xx a redirect (not followed), else a failing status. */
function outcomeOf(status: number): Outcome {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 410) return 'gone';
  if (status >= 300 && status < 400) return 'redirect';
  return 'http-status';
}

/** The answer's status, recorded headers and body excerpt (reading at most MAX_READ_BYTES of the body). */
async function readAnswer(res: Answer): Promise<Partial<AttemptResult> & { outcome: Outcome }> {
  const status = res.statusCode;
  const recorded: Record<string, string> = {};
  for (const h of RECORDED_HEADERS) {
    const v = res.headers[h];
    if (typeof v === 'string') recorded[h] = v.slice(0, 200);
  }
  const chunks: Buffer[] = [];
  let read = 0;
  try {
    for await (const c of res.body as AsyncIterable<Buffer>) {
      if (read < EXCERPT_BYTES) chunks.push(c);
      read += c.length;
      if (read > MAX_READ_BYTES) {
        res.body.destroy();
        break;
      }
    }
  } catch {
    // a body cut short still has its status
  }
  const outcome = outcomeOf(status);
  return {
    outcome,
    statusCode: status,
    headers: recorded,
    excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8'),
    retryAfterMs: parseRetryAfter(recorded['retry-after']),
    error:
      outcome === 'ok'
        ? null
        : outcome === 'redirect'
          ? `answered ${status} (redirects are not followed)`
          : `answered ${status}`,
  };
}
