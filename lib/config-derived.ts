/**
 * The settings of lib/config.ts whose value, when unset, follows from others (the data directories,
 * the webhook rules that differ between development and production), the webhook retry schedule
 * read as a list of durations, and the error a bad configuration stops the process with.
 */
import { duration } from './setting-kinds.js';

/** Where a webhook receiver on this machine listens: allowed by default in development only. */
export const LOOPBACK_CIDRS = '127.0.0.0/8,::1/128';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The derived settings' types in the parsed configuration (in place of the strings the environment
 * gives); a type, not an interface, so a Config still reads as a record of settings.
 */
export type DerivedSettings = {
  DATA_DIR: string;
  FILESTORE_ROOT: string;
  BACKUP_ROOT: string;
  WEBHOOK_ALLOW_HTTP: boolean;
  /** CIDRs webhook receivers may be at although private or loopback (comma-separated). */
  WEBHOOK_ALLOWED_ADDRESSES: string;
  /** Milliseconds between attempts, after the first. */
  WEBHOOK_RETRY_SCHEDULE: number[];
};

/** What the derived settings are read from: the table's values as parsed. */
interface ParsedSettings {
  NODE_ENV: 'development' | 'test' | 'production';
  ERP_BACKEND: string;
  DATA_DIR?: string;
  FILESTORE_ROOT?: string;
  BACKUP_ROOT?: string;
  WEBHOOK_ALLOW_HTTP?: string;
  WEBHOOK_ALLOWED_ADDRESSES?: string;
  WEBHOOK_RETRY_SCHEDULE: string;
}

export function derivedSettings(c: ParsedSettings): DerivedSettings {
  const retrySchedule = webhookRetrySchedule(c.WEBHOOK_RETRY_SCHEDULE);
  const dataDir = c.DATA_DIR ?? (c.ERP_BACKEND === 'odoo' ? '.data/odoo' : '.data');
  return {
    DATA_DIR: dataDir,
    FILESTORE_ROOT: c.FILESTORE_ROOT ?? `${dataDir}/filestore`,
    BACKUP_ROOT: c.BACKUP_ROOT ?? `${dataDir}/backups`,
    WEBHOOK_ALLOW_HTTP: c.WEBHOOK_ALLOW_HTTP ? c.WEBHOOK_ALLOW_HTTP === 'true' : c.NODE_ENV !== 'production',
    WEBHOOK_ALLOWED_ADDRESSES: c.WEBHOOK_ALLOWED_ADDRESSES ?? (c.NODE_ENV === 'development' ? LOOPBACK_CIDRS : ''),
    WEBHOOK_RETRY_SCHEDULE: retrySchedule,
  };
}

/** WEBHOOK_RETRY_SCHEDULE (`5s,5m,30m`) in milliseconds; anything but a list of durations is a ConfigError. */
function webhookRetrySchedule(value: string): number[] {
  const bad = value
    .split(',')
    .map((d) => d.trim())
    .filter((d) => !duration.safeParse(d).success);
  if (bad.length > 0 || value.trim() === '') {
    throw new ConfigError(
      `Invalid configuration:\n  WEBHOOK_RETRY_SCHEDULE: must be a comma-separated list of durations such as "5s,5m,30m" (bad: ${bad.join(', ') || 'empty'})`,
    );
  }
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => duration.parse(s));
}
