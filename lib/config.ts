/**
 * One schema for every environment variable the platform reads. Parsed once; a bad or missing
 * variable stops the process with a message that names each one. Defaults are the local ones
 * (`npm run dev`); docker-compose.yml sets every variable explicitly.
 */
import { z } from 'zod';

const port = z.coerce.number().int().min(1).max(65535);
const url = z.string().url();
const key = z.string().min(16, 'must be at least 16 characters');

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
  OPS_API_KEY: key.default('dev-ops-key-0000000000000000000000000000000000000000000000000000'),

  NOTIFICATIONS_HOST: z.string().default('127.0.0.1'),
  NOTIFICATIONS_PORT: port.default(8080),
  NOTIFICATIONS_URL: url.default('http://127.0.0.1:8080'),
  /** The key callers send to the notifications service in `X-API-Key`. */
  NOTIFICATIONS_API_KEY: key.default('dev-notifications-key-000000000000000000000000000000000000000000'),
  /** Keys the notifications service accepts (comma-separated; two during a rotation). */
  NOTIFICATIONS_ACCEPTED_KEYS: z
    .string()
    .default('dev-notifications-key-000000000000000000000000000000000000000000')
    .transform((s) => s.split(',').map((k) => k.trim()).filter(Boolean))
    .pipe(z.array(key).min(1, 'must name at least one key')),

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

  /** Local only: where `npm run dev` keeps its servers' data, and the demo admin's password. */
  DATA_DIR: z.string().default('.data'),
  DEV_ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function parseConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return result.data;
}

let cached: Config | undefined;

/** The process-wide configuration, parsed on first use. */
export function config(): Config {
  cached ??= parseConfig();
  return cached;
}
