/**
 * The workspace API limits that apply to a workspace: the configured defaults, or what an operator
 * granted it "by arrangement" (specification §8) in workspace_rate_limits, including the cap on its
 * live keys (api-keys.ts).
 */
import type pg from 'pg';
import type { Config } from '../../lib/config.js';

export interface Limits {
  /** Per key. */
  burst: number;
  perSecond: number;
  agentPerMinute: number;
  /** Per workspace, all its keys together (never below the per-key figures). */
  workspaceBurst: number;
  workspacePerSecond: number;
  /** The most live keys the workspace may hold. */
  maxApiKeys: number;
}

/** What an operator sets for a workspace; a null (or absent) workspace figure is the default. */
export interface LimitOverride {
  burst: number;
  perSecond: number;
  agentPerMinute: number;
  workspaceBurst?: number | null;
  workspacePerSecond?: number | null;
  maxApiKeys?: number | null;
}

export type LimitDefaults = Pick<
  Config,
  | 'RATE_LIMIT_BURST'
  | 'RATE_LIMIT_PER_SECOND'
  | 'RATE_LIMIT_AGENT_PER_MINUTE'
  | 'RATE_LIMIT_WORKSPACE_BURST'
  | 'RATE_LIMIT_WORKSPACE_PER_SECOND'
  | 'API_KEY_MAX_PER_WORKSPACE'
>;

/** The limits that apply: the override's figures, else the defaults; a workspace's never below one key's. */
export function effectiveLimits(c: LimitDefaults, o: LimitOverride | undefined): Limits {
  const burst = o?.burst ?? c.RATE_LIMIT_BURST;
  const perSecond = o?.perSecond ?? c.RATE_LIMIT_PER_SECOND;
  return {
    burst,
    perSecond,
    agentPerMinute: o?.agentPerMinute ?? c.RATE_LIMIT_AGENT_PER_MINUTE,
    workspaceBurst: Math.max(burst, o?.workspaceBurst ?? c.RATE_LIMIT_WORKSPACE_BURST),
    workspacePerSecond: Math.max(perSecond, o?.workspacePerSecond ?? c.RATE_LIMIT_WORKSPACE_PER_SECOND),
    maxApiKeys: o?.maxApiKeys ?? c.API_KEY_MAX_PER_WORKSPACE,
  };
}

// ---- the per-workspace overrides (ops API), by workspace id ----

const OVERRIDE_COLUMNS = `burst, per_second AS "perSecond", agent_per_minute AS "agentPerMinute", workspace_burst AS "workspaceBurst",
  workspace_per_second AS "workspacePerSecond", max_api_keys AS "maxApiKeys"`;

export async function getLimitOverride(pool: pg.Pool, workspaceId: string): Promise<LimitOverride | undefined> {
  const { rows } = await pool.query<LimitOverride>(
    `SELECT ${OVERRIDE_COLUMNS} FROM workspace_rate_limits WHERE workspace_id = $1`,
    [workspaceId],
  );
  return rows[0];
}

export async function setLimitOverride(pool: pg.Pool, workspaceId: string, limits: LimitOverride): Promise<void> {
  await pool.query(
    `INSERT INTO workspace_rate_limits (workspace_id, burst, per_second, agent_per_minute, workspace_burst, workspace_per_second, max_api_keys)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (workspace_id) DO UPDATE
       SET burst = EXCLUDED.burst, per_second = EXCLUDED.per_second, agent_per_minute = EXCLUDED.agent_per_minute,
           workspace_burst = EXCLUDED.workspace_burst, workspace_per_second = EXCLUDED.workspace_per_second,
           max_api_keys = EXCLUDED.max_api_keys, updated_at = now()`,
    [
      workspaceId,
      limits.burst,
      limits.perSecond,
      limits.agentPerMinute,
      limits.workspaceBurst ?? null,
      limits.workspacePerSecond ?? null,
      limits.maxApiKeys ?? null,
    ],
  );
}

export async function removeLimitOverride(pool: pg.Pool, workspaceId: string): Promise<void> {
  await pool.query('DELETE FROM workspace_rate_limits WHERE workspace_id = $1', [workspaceId]);
}
