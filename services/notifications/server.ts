import { Redis } from 'ioredis';
import { config } from '../../lib/config.js';
import { buildNotificationsApp } from './app.js';
import { createSmtpMailer } from './mailer.js';

/** Starts the notifications service; returns a function that stops it. */
export async function startNotifications(cfg = config()) {
  const redis = new Redis(cfg.REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 2 });
  const mailer = createSmtpMailer({ host: cfg.SMTP_HOST, port: cfg.SMTP_PORT, from: cfg.MAIL_FROM });
  const app = await buildNotificationsApp({
    mailer,
    redis,
    acceptedKeys: () => cfg.NOTIFICATIONS_ACCEPTED_KEYS,
    appUrl: cfg.API_PUBLIC_URL,
    logLevel: cfg.LOG_LEVEL,
  });
  redis.on('error', (err) => app.log.warn({ err: err.message }, 'redis connection error'));
  await app.listen({ host: cfg.NOTIFICATIONS_HOST, port: cfg.NOTIFICATIONS_PORT });
  return {
    app,
    async close() {
      await app.close();
      mailer.close();
      redis.disconnect();
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const svc = await startNotifications();
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void svc.close());
}
