import { Redis } from 'ioredis';
import type { DestinationStream } from 'pino';
import { config } from '../../lib/config.js';
import { createPool, withTransaction } from '../../lib/db.js';
import { issueActivationLink } from '../../domain/portal/activation.js';
import { startServiceKeyVerifier } from '../../domain/service-keys/service-verifier.js';
import { buildNotificationsApp } from './app.js';
import { createSmtpMailer } from './mailer.js';
import { logRedisErrors, runAsMain, stopInOrder } from '../../lib/service-app.js';

export const NOTIFICATIONS_TARGET = 'notifications';
const DAY_MS = 86_400_000;

/**
 * Starts the notifications service; returns a function that stops it.
 * `logStream`: where the log lines go (default standard output).
 */
export async function startNotifications(cfg = config(), { logStream }: { logStream?: DestinationStream } = {}) {
  const redis = new Redis(cfg.REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 2 });
  // the registry of accepted service keys (and their usage) lives in the platform database
  const pool = createPool(cfg.DATABASE_URL, 3);
  const mailer = createSmtpMailer({ host: cfg.SMTP_HOST, port: cfg.SMTP_PORT, from: cfg.MAIL_FROM });
  const serviceKeys = await startServiceKeyVerifier(NOTIFICATIONS_TARGET, pool, cfg);
  const app = await buildNotificationsApp({
    mailer,
    redis,
    serviceKeys,
    appUrl: cfg.API_PUBLIC_URL,
    activationLink: (owner) =>
      withTransaction(pool, (db) =>
        issueActivationLink(db, { publicUrl: cfg.API_PUBLIC_URL, ttlMs: cfg.ACTIVATION_LINK_TTL_DAYS * DAY_MS }, owner),
      ),
    logLevel: cfg.LOG_LEVEL,
    logStream,
  });
  logRedisErrors(redis, app.log);
  await app.listen({ host: cfg.NOTIFICATIONS_HOST, port: cfg.NOTIFICATIONS_PORT });
  return {
    app,
    serviceKeys,
    close: stopInOrder(
      () => app.close(),
      () => serviceKeys.close(),
      () => pool.end(),
      () => mailer.close(),
      () => redis.disconnect(),
    ),
  };
}

await runAsMain(import.meta.url, 'notifications', () => startNotifications());
