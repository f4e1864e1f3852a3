/**
 * The notifications service (specification §4.6): welcome, generic e-mail and alert messages,
 * sent over SMTP. Every route but /healthz needs `X-API-Key`.
 *
 * Idempotency: a caller may send `Idempotency-Key` (the welcome workflow sends its workflow id);
 * ./send-once.ts sends at most once per key.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Redis } from 'ioredis';
import { buildServiceApp } from '../../lib/service-app.js';
import type { ServiceKeyCheck } from '../../domain/service-keys/service-key-auth.js';
import { registerKeyedRoutes, type KeyedRoutes } from '../service-routes.js';
import type { Mailer } from './mailer.js';
import { IdempotentMailer } from './send-once.js';
import { welcomeEmail, type WelcomeActivation } from './welcome-email.js';
import type { DestinationStream } from 'pino';

export interface NotificationsDeps {
  mailer: Mailer;
  redis: Redis;
  /** The service-key check of this target (domain/service-keys/verifier.ts): every registered caller may call. */
  serviceKeys: ServiceKeyCheck;
  appUrl: string;
  /**
   * The owner's activation link for a welcome e-mail (a new one each time: the previous one dies),
   * or undefined when the owner has a password already. Absent: welcome e-mails carry no link.
   */
  activationLink?: (owner: { email: string; workspace: string }) => Promise<WelcomeActivation | undefined>;
  logLevel?: string;
  /** Where the log lines go (default standard output). */
  logStream?: DestinationStream;
}

const Email = Type.String({ format: 'email', maxLength: 254 });
const Sent = Type.Object({
  status: Type.Union([Type.Literal('sent'), Type.Literal('duplicate')]),
  messageId: Type.String(),
});
const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

export async function buildNotificationsApp(deps: NotificationsDeps): Promise<FastifyInstance> {
  const app = await buildServiceApp(deps.logLevel, { service: 'notifications', logStream: deps.logStream });
  const mail = new IdempotentMailer(deps.mailer, deps.redis);
  app.get('/healthz', { schema: { response: { 200: Type.Object({ status: Type.Literal('ok') }) } } }, async () => ({
    status: 'ok' as const,
  }));
  await registerKeyedRoutes(app, deps.serviceKeys, {}, (v1) => {
    registerWelcome(v1, mail, deps);
    registerEmail(v1, mail);
    registerAlert(v1, mail);
  });
  return app;
}

function registerWelcome(v1: KeyedRoutes, mail: IdempotentMailer, deps: NotificationsDeps) {
  v1.post(
    '/v1/welcome',
    {
      schema: {
        headers: IdempotencyHeaders,
        body: Type.Object(
          { email: Email, workspace: Type.String({ minLength: 1, maxLength: 100 }) },
          { additionalProperties: false },
        ),
        response: { 200: Sent },
      },
    },
    async (req) => {
      // the link is issued only when the e-mail is really sent (not for a repeat of an idempotency key)
      let activation: WelcomeActivation | undefined;
      const result = await mail.sendOnce(req.headers['idempotency-key'], async () => {
        activation = await deps.activationLink?.(req.body);
        return welcomeEmail({ ...req.body, appUrl: deps.appUrl, activation });
      });
      req.log.info(
        { workspace: req.body.workspace, status: result.status, activationLink: activation !== undefined },
        'welcome e-mail',
      );
      return result;
    },
  );
}

function registerEmail(v1: KeyedRoutes, mail: IdempotentMailer) {
  v1.post(
    '/v1/email',
    {
      schema: {
        headers: IdempotencyHeaders,
        body: Type.Object(
          {
            to: Email,
            subject: Type.String({ minLength: 1, maxLength: 200 }),
            text: Type.String({ minLength: 1, maxLength: 100_000 }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Sent },
      },
    },
    async (req) => mail.sendOnce(req.headers['idempotency-key'], req.body),
  );
}

function registerAlert(v1: KeyedRoutes, mail: IdempotentMailer) {
  v1.post(
    '/v1/alert',
    {
      schema: {
        headers: IdempotencyHeaders,
        body: Type.Object(
          {
            to: Email,
            severity: Type.Union([Type.Literal('info'), Type.Literal('warning'), Type.Literal('critical')]),
            title: Type.String({ minLength: 1, maxLength: 200 }),
            message: Type.String({ minLength: 1, maxLength: 10_000 }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Sent },
      },
    },
    async (req) =>
      mail.sendOnce(req.headers['idempotency-key'], {
        to: req.body.to,
        subject: `[${req.body.severity.toUpperCase()}] ${req.body.title}`,
        text: req.body.message,
        headers: { 'X-Plana-Severity': req.body.severity },
      }),
  );
}
