/**
 * The readiness probe, through the tenant's route (the ERP entry point with the tenant's Host
 * header), until the tenant answers or the window ends:
 * 1. GET /web/health must answer 200 with {"status":"pass"} (the route is up, an ERP worker runs);
 * 2. the tenant database must answer as the tenant's API user: on Odoo 19+ over JSON-2 with its API
 *    key (the user's id looked up with it), before 19 `authenticate` over XML-RPC. Real
 *    Odoo answers /web/health for any Host without opening the tenant's database, so step 1 alone
 *    cannot notice a missing or broken one.
 * node:http, because fetch does not let a caller set Host.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import type pg from 'pg';
import {
  API_KEY_MIN_VERSION,
  API_KEY_RENEW_DAYS,
  ensureErpApiKey,
  erpApiLogin,
  erpApiUserDeps,
  loadErpApiCredentials,
} from '../domain/erp/api-user.js';
import { ErpFault, createJson2Client, xmlRpcCall } from '../domain/erp/client.js';
import { routeOfTenant } from '../domain/tenants/http-routes.js';
import { erpVersionOfNamespace } from '../domain/tenants/types.js';
import type { PlatformDeps } from './deps.js';

export interface HealthObservation {
  healthy: boolean;
  /** HTTP status, or 0 when the ERP entry point could not be reached. */
  httpStatus: number;
  /** What the answer said, e.g. `503: database acme.erp.plana.test does not exist`. */
  detail: string;
  attempts: number;
}

export function getTenantHealth(
  erpUrl: string,
  host: string,
  timeoutMs = 5_000,
): Promise<Omit<HealthObservation, 'attempts'>> {
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
    req.on('error', (err) =>
      resolve({ healthy: false, httpStatus: 0, detail: `ERP entry point ${url.origin} unreachable: ${err.message}` }),
    );
  });
}

/**
 * /web/health, then `authenticate` on the tenant database as the tenant's API user: healthy only
 * when both answer. `tenant` and `database` name what the route serves.
 */
export async function probeTenant(
  deps: { erpUrl: string; platformPool: pg.Pool; secretsKey: string },
  target: { host: string; tenant: string; database: string },
  timeoutMs = 5_000,
): Promise<Omit<HealthObservation, 'attempts'>> {
  const web = await getTenantHealth(deps.erpUrl, target.host, timeoutMs);
  if (!web.healthy) return web;
  // without stored credentials (no API user yet) the login is still tried: a database that exists
  // answers False, one that does not answers a fault
  const credentials = await loadErpApiCredentials(deps.platformPool, deps.secretsKey, target.tenant);
  const login = credentials?.login ?? erpApiLogin(target.database);
  const route = await routeOfTenant(deps.platformPool, target.tenant);
  const version = route ? Number(erpVersionOfNamespace(route.namespace)) : 0;
  if (version >= API_KEY_MIN_VERSION && credentials) {
    // JSON-2 takes API keys only: the database must answer with the user's key
    if (!credentials.apiKey)
      return {
        ...web,
        healthy: false,
        detail: `${web.detail}; database ${target.database}: the API user ${login} has no API key yet`,
      };
    try {
      await createJson2Client({
        baseUrl: deps.erpUrl,
        host: target.host,
        db: target.database,
        login,
        apiKey: credentials.apiKey,
        timeoutMs,
      }).authenticate();
      return {
        ...web,
        detail: `${web.detail}; database ${target.database} answers over JSON-2 (${login} with its API key)`,
      };
    } catch (err) {
      const said =
        err instanceof ErpFault
          ? `${err.code === 3 ? 'refused the API key' : 'fault'} (${err.message})`
          : (err as Error).message;
      return {
        ...web,
        healthy: false,
        detail: `${web.detail}; database ${target.database} does not answer over JSON-2: ${said}`,
      };
    }
  }
  let uid: unknown;
  try {
    uid = await xmlRpcCall({ baseUrl: deps.erpUrl, host: target.host, timeoutMs }, '/xmlrpc/2/common', 'authenticate', [
      target.database,
      login,
      credentials?.password ?? '',
      {},
    ]);
  } catch (err) {
    const said = err instanceof ErpFault ? err.message : (err as Error).message;
    return { ...web, healthy: false, detail: `${web.detail}; database ${target.database} does not answer: ${said}` };
  }
  if (typeof uid === 'number')
    return { ...web, detail: `${web.detail}; database ${target.database} answers (${login} authenticated)` };
  const why = credentials ? `refused the API user ${login}` : 'answers, but the tenant has no ERP API user yet';
  return { ...web, healthy: false, detail: `${web.detail}; database ${target.database} ${why}` };
}

export const createTenantHealthActivities = ({ config, platformPool }: PlatformDeps) => {
  /**
   * The API key of a 19+ tenant is renewed here when fewer than API_KEY_RENEW_DAYS remain: a Ready
   * tenant is probed every TENANT_READY_PROBE_INTERVAL, so its key never runs out while it is served
   * (each reconcile's ensure step renews it too). A 19+ tenant without a key (Ready before keys
   * existed) gets one here. Not due: two SELECTs (the route's version, the key's expiry), no ERP call.
   */
  async function renewApiKeyIfDue(target: { tenant: string; database: string }) {
    const route = await routeOfTenant(platformPool, target.tenant);
    if (!route || Number(erpVersionOfNamespace(route.namespace)) < API_KEY_MIN_VERSION) return;
    const due = await platformPool.query(
      `SELECT 1 FROM tenant_erp_credentials
        WHERE tenant = $1 AND (api_key_expires_at IS NULL OR api_key_expires_at < now() + make_interval(days => $2))`,
      [target.tenant, API_KEY_RENEW_DAYS],
    );
    if (due.rowCount) await ensureErpApiKey(erpApiUserDeps(config, platformPool), target);
  }
  return {
    /** Probes every `intervalMs` until healthy or `windowMs` has passed; returns the last observation. */
    async probeTenantHealth(input: {
      host: string;
      tenant?: string;
      database?: string;
      windowMs: number;
      intervalMs: number;
    }): Promise<HealthObservation> {
      const ctx = Context.current();
      const until = Date.now() + input.windowMs;
      // probes scheduled before tenant and database were passed: the host is <tenant>.<TENANT_DOMAIN> and names the database
      const target = {
        host: input.host,
        tenant: input.tenant ?? input.host.slice(0, -(config.TENANT_DOMAIN.length + 1)),
        database: input.database ?? input.host,
      };
      const deps = { erpUrl: config.ERP_URL, platformPool, secretsKey: config.SECRETS_KEY };
      await renewApiKeyIfDue(target).catch(() => {}); // best effort: the probe then says whether the key still works
      for (let attempts = 1; ; attempts++) {
        const seen = await probeTenant(deps, target);
        ctx.heartbeat({ attempts, detail: seen.detail });
        if (seen.healthy || Date.now() + input.intervalMs > until) return { ...seen, attempts };
        await sleep(input.intervalMs, undefined, { signal: ctx.cancellationSignal }).catch(() => {});
        if (ctx.cancellationSignal.aborted) return { ...seen, attempts };
      }
    },
  };
};
