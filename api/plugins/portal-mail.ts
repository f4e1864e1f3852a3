/**
 * The account API's e-mail sender for the portal (invitations, e-mail confirmations): the
 * notifications service over HTTP with the account API's service key from the secret store.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { NotificationsMailClient } from '../../domain/notifications/mail-client.js';

declare module 'fastify' {
  interface FastifyInstance {
    portalMail: NotificationsMailClient;
  }
}

export const portalMail = fp(
  async (app: FastifyInstance) => {
    const { config } = app.deps;
    app.decorate('portalMail', new NotificationsMailClient(config.NOTIFICATIONS_URL, app.serviceKeySecrets));
  },
  { name: 'portal-mail', dependencies: ['service-key-secrets'] },
);
