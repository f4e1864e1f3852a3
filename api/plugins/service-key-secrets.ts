/**
 * The account API's one secret store for the keys it sends (account-api → banking, agents, events,
 * notifications; billing-webhooks → events): PostgreSQL, cached SERVICE_KEY_SECRET_TTL_MS, and
 * reporting each pair it has read to the pair's target (domain/service-keys/holders.ts), so a
 * rotation of an idle pair can prove this process switched. Stopped when the app closes.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { holderOptions, reportingStore, type ReportingStore } from '../../domain/service-keys/holders.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    serviceKeySecrets: ReportingStore;
  }
}

export const serviceKeySecrets = fp(
  async (app: FastifyInstance) => {
    const { config, pool } = app.deps;
    const store = reportingStore(
      new PgSecretStore(pool, config.SECRETS_KEY, config.SERVICE_KEY_SECRET_TTL_MS),
      holderOptions(config, { stopped: () => pool.ended, log: app.log }),
    );
    app.decorate('serviceKeySecrets', store);
    app.addHook('onClose', async () => store.close());
  },
  { name: 'service-key-secrets' },
);
