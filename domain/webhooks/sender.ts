/**
 * One HTTP attempt of a webhook: POST with keep-alive agents whose `lookup` refuses forbidden
 * addresses (addresses.ts); a literal address in the URL (no lookup happens) is checked here.
 * Redirects are never followed (Node's http client does not follow them; a 3xx is a failure).
 * The result names its outcome, a subset of the response headers and a bounded body excerpt.
 */
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { AddressPolicy } from './addresses.js';

export type Outcome = 'ok' | 'gone' | 'redirect' | 'http-status' | 'timeout' | 'connection' | 'forbidden-address' | 'endpoint-disabled';

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

export class WebhookSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(private readonly opts: { policy: AddressPolicy; timeoutMs: number; dnsServers?: string[]; maxSocketsPerHost?: number }) {
    const lookup = opts.policy.guardedLookup(opts.dnsServers) as unknown as http.AgentOptions['lookup'];
    // noDelay: headers and body leave at once (Nagle + delayed ACK would add 40 ms per attempt)
    const agentOptions = { keepAlive: true, noDelay: true, maxSockets: opts.maxSocketsPerHost ?? 64, lookup, scheduling: 'lifo' as const };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
  }

  send(rawUrl: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
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
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      return Promise.resolve(done({ outcome: 'connection', error: 'invalid URL' }));
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const why = this.opts.policy.refusal(host);
      if (why) return Promise.resolve(done({ outcome: 'forbidden-address', error: `refused to connect: ${why}` }));
    }
    const lib = url.protocol === 'https:' ? https : http;
    const payload = Buffer.from(body);
    return new Promise((resolve) => {
      let settled = false;
      const finish = (r: AttemptResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(r);
      };
      const req = lib.request(url, {
        method: 'POST',
        agent: url.protocol === 'https:' ? this.httpsAgent : this.httpAgent,
        headers: { ...headers, 'content-length': String(payload.length) },
      });
      const timer = setTimeout(() => {
        finish(done({ outcome: 'timeout', error: `no answer within ${this.opts.timeoutMs} ms` }));
        req.destroy();
      }, this.opts.timeoutMs);
      req.on('error', (err: Error & { code?: string }) => {
        const forbidden = err.name === 'ForbiddenAddressError';
        finish(done({ outcome: forbidden ? 'forbidden-address' : 'connection', error: forbidden ? `refused to connect: ${err.message}` : `${err.code ?? 'error'}: ${err.message}` }));
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const recorded: Record<string, string> = {};
        for (const h of RECORDED_HEADERS) {
          const v = res.headers[h];
          if (typeof v === 'string') recorded[h] = v.slice(0, 200);
        }
        const chunks: Buffer[] = [];
        let read = 0;
        res.on('data', (c: Buffer) => {
          if (read < EXCERPT_BYTES) chunks.push(c);
          read += c.length;
          if (read > MAX_READ_BYTES) res.destroy();
        });
        const end = () => {
          const outcome: Outcome =
            status >= 200 && status < 300 ? 'ok' : status === 410 ? 'gone' : status >= 300 && status < 400 ? 'redirect' : 'http-status';
          finish(
            done({
              outcome,
              statusCode: status,
              headers: recorded,
              excerpt: Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8'),
              retryAfterMs: parseRetryAfter(recorded['retry-after']),
              error: outcome === 'ok' ? null : outcome === 'redirect' ? `answered ${status} (redirects are not followed)` : `answered ${status}`,
            }),
          );
        };
        res.on('end', end);
        res.on('close', end);
        res.on('error', end);
      });
      req.end(payload);
    });
  }

  close() {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
