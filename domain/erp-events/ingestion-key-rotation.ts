/**
 * "Roll the consumer" for the `erp → event-ingestion` pair (switch proof `rules`, inventory.ts):
 * its consumers are the tenant ERPs' automation rules, whose URLs carry tokens made from the pair's
 * key (ingestion.ts, domain/erp-events/automation-rules.ts). They post only when records change, so their use
 * cannot prove a switch; the rotation moves them itself: every routed tenant's rules are rewritten
 * to the tokens of the pair's current key with the reconcile's own code (`ensureEventRules`, in
 * the tenant admin's web session, as ensure-tier-modules does), and the tenants that could not be
 * updated are answered. The URL (it holds the token) is never in a result or an error.
 */
import type pg from 'pg';
import pLimit from 'p-limit';
import { routedTenants } from '../tenants/http-routes.js';
import { adminSession, type ErpApiUserDeps } from '../erp/admin-session.js';
import { ErpFault } from '../erp/client.js';
import { ensureEventRules } from './automation-rules.js';
import type { SecretStore } from '../service-keys/secret-store.js';

export interface RuleRewriteDeps {
  /** The platform database (tenant_routes). */
  pool: pg.Pool;
  erp: ErpApiUserDeps;
  eventsUrl: string;
  /** Where the pair's current key is read (no cache: the version the rotation has just made current). */
  store: SecretStore;
  /** The tenants whose rules hold the pair's tokens: every routed tenant unless given (tests scope it to their own). */
  tenants?: () => Promise<{ tenant: string; database: string }[]>;
  /** Per tenant ERP session (ms). */
  timeoutMs?: number;
}

export interface RuleRewriteResult {
  /** The key id whose tokens the rules carry now. */
  keyId: string;
  tenants: number;
  /** Tenants whose rules had to change (the rewrite proper). */
  updated: string[];
  /** Tenants whose rules carried this key's tokens already. */
  unchanged: number;
  /** Tenants without a database (nothing holds a token there). */
  skipped: string[];
  /** Tenants whose ERP could not be updated, with why (never a URL or a token). */
  failed: { tenant: string; error: string }[];
}

const databaseMissing = (err: unknown) =>
  err instanceof ErpFault && /database "[^"]*" does not exist/.test(err.faultString);

/**
 * Rewrites every tenant's event rules to the tokens of the pair's current key, `concurrency`
 * tenants at a time. `keyId`: the version the caller expects to be current (the rotation's new key,
 * or the old one on a roll-back); a different current key is an error (retried by the activity),
 * never a silent rewrite to the wrong key.
 */
export async function rewriteEventRules(
  deps: RuleRewriteDeps,
  pair: { caller: string; target: string; keyId: string },
  opts: { concurrency?: number; heartbeat?: () => void } = {},
): Promise<RuleRewriteResult> {
  const current = await deps.store.current(pair.caller, pair.target);
  if (current.keyId !== pair.keyId)
    throw new Error(`the current ${pair.caller} → ${pair.target} key is ${current.keyId}, not ${pair.keyId}`);
  const tenants = await (deps.tenants ?? (() => routedTenants(deps.pool)))();
  const result: RuleRewriteResult = {
    keyId: current.keyId,
    tenants: tenants.length,
    updated: [],
    unchanged: 0,
    skipped: [],
    failed: [],
  };
  const limit = pLimit(opts.concurrency ?? 4);
  await Promise.all(
    tenants.map((t) =>
      limit(async () => {
        try {
          const { session } = await adminSession(deps.erp, t.database, { timeoutMs: deps.timeoutMs ?? 60_000 });
          const rules = await ensureEventRules(session, {
            tenant: t.tenant,
            eventsUrl: deps.eventsUrl,
            ingestionKey: current.key,
          });
          if (rules.created.length || rules.updated.length) result.updated.push(t.tenant);
          else result.unchanged += 1;
        } catch (err) {
          if (databaseMissing(err)) result.skipped.push(t.tenant);
          else
            result.failed.push({
              tenant: t.tenant,
              error: (err instanceof ErpFault ? err.faultString : (err as Error).message).slice(0, 300),
            });
        }
        opts.heartbeat?.();
      }),
    ),
  );
  result.updated.sort();
  result.failed.sort((a, b) => a.tenant.localeCompare(b.tenant));
  return result;
}
