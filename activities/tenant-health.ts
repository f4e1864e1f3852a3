/**
 * The readiness probe: GET /web/health on the tenant's ERP through its route (the ERP entry point
 * with the tenant's Host header), until it answers 200 with {"status":"pass"} or the window ends.
 * node:http, because fetch does not let a caller set Host.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import type { TenantActivityDeps } from './tenant-deps.js';

export interface HealthObservation {
  healthy: boolean;
  /** HTTP status, or 0 when the ERP entry point could not be reached. */
  httpStatus: number;
  /** What the answer said, e.g. `503: database acme.erp.plana.test does not exist`. */
  detail: string;
  attempts: number;
}

export function getTenantHealth(erpUrl: string, host: string, timeoutMs = 5_000): Promise<Omit<HealthObservation, 'attempts'>> {
  const url = new URL('/web/health', erpUrl);
  return new Promise((resolve) => {
    const req = http.get(url, { headers: { host, accept: 'application/json' }, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body = (body + chunk).slice(0, 2_000)));
      res.on('end', () => {
        let parsed: { status?: string; reason?: string } = {};
        try {
          parsed = JSON.parse(body) as typeof parsed;
        } catch {
          /* not JSON */
        }
        const status = res.statusCode ?? 0;
        const healthy = status === 200 && parsed.status === 'pass';
        const said = parsed.reason ?? parsed.status ?? (body.trim().slice(0, 200) || 'no body');
        resolve({ healthy, httpStatus: status, detail: `GET /web/health answered ${status}: ${said}` });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ healthy: false, httpStatus: 0, detail: `ERP entry point ${url.origin} unreachable: ${err.message}` }));
  });
}

export const createTenantHealthActivities = ({ config }: TenantActivityDeps) => ({
  /** Probes every `intervalMs` until healthy or `windowMs` has passed; returns the last observation. */
  async probeTenantHealth(input: { host: string; windowMs: number; intervalMs: number }): Promise<HealthObservation> {
    const ctx = Context.current();
    const until = Date.now() + input.windowMs;
    for (let attempts = 1; ; attempts++) {
      const seen = await getTenantHealth(config.ERP_URL, input.host);
      ctx.heartbeat({ attempts, detail: seen.detail });
      if (seen.healthy || Date.now() + input.intervalMs > until) return { ...seen, attempts };
      await sleep(input.intervalMs, undefined, { signal: ctx.cancellationSignal }).catch(() => {});
      if (ctx.cancellationSignal.aborted) return { ...seen, attempts };
    }
  },
});
