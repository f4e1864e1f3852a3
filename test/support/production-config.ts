/**
 * A production configuration lib/config.ts accepts (real Odoo, a secret of its own for every
 * development default one), for the tests of what it refuses.
 */
export const PRODUCTION: Record<string, string> = {
  NODE_ENV: 'production',
  ERP_BACKEND: 'odoo',
  DATABASE_URL: 'postgres://plana:pw-of-production@postgresql:5432/plana',
  ERP_DATABASE_URL: 'postgres://plana:pw-of-production@postgresql:5432/postgres',
  SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
  AUTH_JWT_SECRET: 'a-production-jwt-secret-of-at-least-32-characters',
  ERP_ADMIN_PASSWORD: 'a-production-erp-admin-password',
  STRIPE_WEBHOOK_SECRET: 'whsec_of_the_production_endpoint',
  LLM_KEY: 'sk-production-model-key',
  CHAT_TOKEN: 'a-production-chat-bot-token',
};
