/**
 * One schema for every environment variable the platform reads. Parsed once; a bad or missing
 * variable stops the process with a message that names each one. Defaults are the local ones
 * (`npm run dev`); docker-compose.yml sets every variable explicitly.
 */
import { z } from 'zod';

const port = z.coerce.number().int().min(1).max(65535);
const url = z.string().url();
const key = z.string().min(16, 'must be at least 16 characters');
/** A duration such as `30 days`, `5 minutes`, `2s` or `500ms`, parsed to milliseconds. */
const durationUnits: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const duration = z
  .string()
  .regex(/^\d+\s*(ms|s|sec|seconds?|m|min|minutes?|h|hours?|d|days?)$/, 'must be a duration such as "30 days", "5 minutes" or "2s"')
  .transform((s) => {
    const [, n, unit] = /^(\d+)\s*(\w+)$/.exec(s)!;
    const u = unit === 'ms' ? 'ms' : unit!.startsWith('mi') || unit === 'm' ? 'm' : unit!.charAt(0);
    return Number(n) * durationUnits[u]!;
  });

export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  DATABASE_URL: url.default('postgres://plana:plana@127.0.0.1:55432/plana'),
  REDIS_URL: url.default('redis://127.0.0.1:56379'),
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('platform'),
  TEMPORAL_UI_URL: url.default('http://127.0.0.1:8233'),

  API_HOST: z.string().default('127.0.0.1'),
  API_PORT: port.default(3000),
  API_PUBLIC_URL: url.default('http://127.0.0.1:3000'),
  /** The account API as other platform processes reach it (inside a cluster: its service name). */
  ACCOUNT_API_URL: url.default('http://127.0.0.1:3000'),
  /**
   * CLI only: the operator's service key (operator → account-api). Unset, the CLI reads it from the
   * local secret store (DATABASE_URL + SECRETS_KEY). Services never read keys from configuration:
   * targets accept what the service-key registry holds, consumers read the secret store.
   */
  OPS_API_KEY: key.optional(),
  /** Service keys: a target's periodic reload of its accepted keys (NOTIFY reloads at once), its usage flush, the consumers' secret cache. */
  SERVICE_KEY_REFRESH_MS: z.coerce.number().int().min(100).default(30_000),
  SERVICE_KEY_USAGE_FLUSH_MS: z.coerce.number().int().min(50).default(5_000),
  SERVICE_KEY_SECRET_TTL_MS: z.coerce.number().int().min(0).default(5_000),
  /**
   * Service-key rotation (workflows/rotate-service-key.ts): after the new key is registered pending,
   * how long to wait before handing it to the consumer (covers a target that missed the NOTIFY: its
   * periodic reload); how long the old key must then be silent in the target's usage records (more
   * than the consumers' secret cache TTL plus the targets' usage flush); how often usage is checked;
   * the deadline (from the hand-over) after which the rotation rolls back; and, on a roll-back, how
   * long to wait before revoking the new key (the consumers' cache TTL, with a margin).
   */
  SERVICE_KEY_ROTATION_ACCEPT_WAIT_MS: z.coerce.number().int().min(0).default(35_000),
  SERVICE_KEY_ROTATION_QUIET_MS: z.coerce.number().int().min(1).default(10 * 60_000),
  SERVICE_KEY_ROTATION_POLL_MS: z.coerce.number().int().min(50).default(30_000),
  SERVICE_KEY_ROTATION_DEADLINE_MS: z.coerce.number().int().min(1).default(3600_000),
  SERVICE_KEY_ROTATION_ROLLBACK_WAIT_MS: z.coerce.number().int().min(0).default(30_000),

  NOTIFICATIONS_HOST: z.string().default('127.0.0.1'),
  NOTIFICATIONS_PORT: port.default(8080),
  NOTIFICATIONS_URL: url.default('http://127.0.0.1:8080'),

  /** The events service (§4.3, §6): CloudEvents on a Redis stream. */
  EVENTS_HOST: z.string().default('127.0.0.1'),
  EVENTS_PORT: port.default(3001),
  EVENTS_URL: url.default('http://127.0.0.1:3001'),
  /** The Redis stream that holds the events, and about how many entries it keeps (XADD MAXLEN ~). */
  EVENTS_STREAM: z.string().regex(/^[\w.:-]{1,100}$/, 'must be a plain Redis key name').default('events'),
  EVENTS_STREAM_MAXLEN: z.coerce.number().int().min(1).default(100_000),
  /** How long the id of a published event is remembered, so a retried publish is not appended twice (seconds). */
  EVENTS_DEDUPE_TTL_SECONDS: z.coerce.number().int().min(1).default(7 * 24 * 3600),
  /** Consumers reclaim an entry another consumer read but did not acknowledge for this long (XAUTOCLAIM). */
  EVENTS_CLAIM_IDLE_MS: z.coerce.number().int().min(100).default(60_000),

  /** The support chat (Mattermost REST API v4; locally the stand-in in sandbox/chat). */
  CHAT_HOST: z.string().default('127.0.0.1'),
  CHAT_PORT: port.default(8065),
  CHAT_URL: url.default('http://127.0.0.1:8065'),
  /** The platform bot's personal access token (`Authorization: Bearer`). */
  CHAT_TOKEN: z.string().min(16, 'must be at least 16 characters').default('dev-chat-bot-token-000000000000'),
  /** The team (26 characters, Mattermost id) that holds the support rooms. */
  CHAT_TEAM_ID: z.string().regex(/^[a-z0-9]{26}$/, 'must be a Mattermost id (26 lowercase letters/digits)').default('planasupportteam0000000000'),

  SMTP_HOST: z.string().default('127.0.0.1'),
  SMTP_PORT: port.default(2525),
  MAIL_FROM: z.string().default('Plana <no-reply@plana.test>'),

  /** The tenant ERPs: where their HTTP entry (the ERP stand-in locally) listens, and their hostnames. */
  ERP_HOST: z.string().default('127.0.0.1'),
  ERP_PORT: port.default(8069),
  ERP_URL: url.default('http://127.0.0.1:8069'),
  TENANT_DOMAIN: z.string().regex(/^[a-z0-9.-]+$/, 'must be a DNS domain').default('erp.plana.test'),
  /** Admin connection to the PostgreSQL server that holds the tenant databases and templates. */
  ERP_DATABASE_URL: url.default('postgres://plana:plana@127.0.0.1:55432/postgres'),
  /** 32 bytes, base64: encrypts stored secrets such as the tenants' ERP API passwords. */
  SECRETS_KEY: z
    .string()
    .default('ZGV2LW9ubHktc2VjcmV0cy1rZXktMzItYnl0ZXMhISE=')
    .refine((s) => Buffer.from(s, 'base64').length === 32, 'must be 32 bytes, base64-encoded'),

  /** Interactive login: HMAC secret (>= 32 chars) signing the short-lived access tokens (JWT, HS256). */
  AUTH_JWT_SECRET: z.string().min(32, 'must be at least 32 characters').default('dev-only-jwt-secret-000000000000000000000000000000'),
  /** Access token lifetime (seconds); refresh token lifetime (seconds), rotated on every use. */
  ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).default(900),
  REFRESH_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).default(30 * 24 * 3600),
  /** Password guessing: after this many failed logins for one e-mail from one address, 429 for the window. */
  LOGIN_MAX_FAILURES: z.coerce.number().int().min(1).default(10),
  LOGIN_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  /** bcrypt cost for passwords and workspace API keys (10 ≈ 80 ms per hash here). */
  BCRYPT_COST: z.coerce.number().int().min(4).max(15).default(10),
  /** Workspace keys: how long a process trusts a verified token before bcrypt again (revocation is checked per request regardless). */
  API_KEY_CACHE_TTL_SECONDS: z.coerce.number().int().min(1).default(300),
  API_KEY_CACHE_SIZE: z.coerce.number().int().min(1).default(10_000),
  /** How often a process writes the keys' last_used_at (and flushes the execution log) to PostgreSQL. */
  API_KEY_USAGE_FLUSH_MS: z.coerce.number().int().min(100).default(5_000),
  EXECUTION_LOG_FLUSH_MS: z.coerce.number().int().min(50).default(1_000),
  /** Execution log retention (days, §8: 90) and how many daily partitions to create ahead. */
  EXECUTION_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).default(90),
  EXECUTION_LOG_PARTITIONS_AHEAD: z.coerce.number().int().min(1).default(7),
  /** Default Workspace API limits per key (§8); operators override per workspace. */
  RATE_LIMIT_BURST: z.coerce.number().int().min(1).default(100),
  RATE_LIMIT_PER_SECOND: z.coerce.number().positive().default(30),
  RATE_LIMIT_AGENT_PER_MINUTE: z.coerce.number().int().min(1).default(10),
  /** OIDC login (§4.8); unset issuer = OIDC disabled. The redirect URI defaults to API_PUBLIC_URL + /api/auth/oidc/callback. */
  OIDC_ISSUER_URL: url.optional(),
  OIDC_CLIENT_ID: z.string().default('plana-account-api'),
  OIDC_CLIENT_SECRET: z.string().optional(),
  OIDC_REDIRECT_URI: url.optional(),

  /** Tenant lifecycle (§3.2): each tenant's filestore folder lives under FILESTORE_ROOT/<tenant>; nothing outside it is ever touched. Default: DATA_DIR/filestore. */
  FILESTORE_ROOT: z.string().optional(),
  /** Where the backup workflow writes `pg_dump` files and filestore archives: BACKUP_ROOT/<tenant>/<timestamp>.{dump,tar.gz}. Default: DATA_DIR/backups. */
  BACKUP_ROOT: z.string().optional(),
  /** How often each tenant's backup schedule (`backup:<tenant>`) runs. */
  BACKUP_INTERVAL: duration.prefault('1 day'),
  /** How long stored backups are kept per tier (§8: starter 30 days, pro 90 days; enterprise is our choice: 365 days). */
  BACKUP_RETENTION_STARTER_DAYS: z.coerce.number().int().min(1).default(30),
  BACKUP_RETENTION_PRO_DAYS: z.coerce.number().int().min(1).default(90),
  BACKUP_RETENTION_ENTERPRISE_DAYS: z.coerce.number().int().min(1).default(365),
  /** How long a cancelled tenant keeps everything before it is deprovisioned (reactivate stops the timer). */
  TENANT_SOAK_PERIOD: duration.prefault('30 days'),
  /** A tenant not Ready this long after an apply gets Ready=False/Unavailable with what blocks it (§3.2: 5 minutes). */
  TENANT_READY_DEADLINE: duration.prefault('5 minutes'),
  /** How often the readiness probe asks a tenant's /web/health; the first retry delay of a failed reconcile. */
  TENANT_PROBE_INTERVAL: duration.prefault('2 seconds'),
  /** The longest wait between two reconciles of a tenant that is not Ready (exponential backoff up to this). */
  TENANT_RECONCILE_BACKOFF_MAX: duration.prefault('5 minutes'),
  /** A tenant's workflow continues as new once its history has this many events (it also does when Temporal suggests it). */
  TENANT_HISTORY_LIMIT: z.coerce.number().int().min(100).default(5_000),
  /** Directory of the PostgreSQL client binaries (pg_dump) backups use; unset = pg_dump from PATH. */
  PG_BIN: z.string().optional(),

  /** Local only: where `npm run dev` keeps its servers' data, and the demo admin's password. */
  DATA_DIR: z.string().default('.data'),
  DEV_ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
});

type ParsedConfig = z.infer<typeof configSchema>;
export type Config = Omit<ParsedConfig, 'FILESTORE_ROOT' | 'BACKUP_ROOT'> & { FILESTORE_ROOT: string; BACKUP_ROOT: string };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function parseConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = result.data;
  return {
    ...c,
    FILESTORE_ROOT: c.FILESTORE_ROOT ?? `${c.DATA_DIR}/filestore`,
    BACKUP_ROOT: c.BACKUP_ROOT ?? `${c.DATA_DIR}/backups`,
  };
}

let cached: Config | undefined;

/** The process-wide configuration, parsed on first use. */
export function config(): Config {
  cached ??= parseConfig();
  return cached;
}
