/**
 * The notifications service (specification §4.6): welcome, generic e-mail and alert messages,
 * sent over SMTP. Every route but /healthz needs `X-API-Key`.
 *
 * Idempotency: a caller may send `Idempotency-Key` (the welcome workflow sends its workflow id).
 * A key seen before returns the first result instead of sending again, so a retried call that
 * timed out after the mail went out does not send a second e-mail.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Redis } from 'ioredis';
import { problemDetails, serverOptions } from '../../lib/http.js';
import type { DestinationStream } from 'pino';
import { registerServiceKeyCheck, requireServiceKey, type ServiceKeyCheck } from '../../domain/service-keys/service-keys.js';
import { AppError } from '../../lib/errors.js';
import type { Mail, Mailer } from './mailer.js';
import { welcomeEmail } from './welcome-email.js';

export interface NotificationsDeps {
  mailer: Mailer;
  redis: Redis;
  /** The service-key check of this target (domain/service-keys/verifier.ts): every registered caller may call. */
  serviceKeys: ServiceKeyCheck;
  appUrl: string;
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

const IDEMPOTENCY_TTL_S = 7 * 24 * 3600;

export async function buildNotificationsApp(deps: NotificationsDeps): Promise<FastifyInstance> {
  const app = Fastify(serverOptions(deps.logLevel ?? 'info', { stream: deps.logStream })).withTypeProvider<TypeBoxTypeProvider>();
  await app.register(problemDetails);

  /** Sends `mail` at most once per idempotency key. */
  async function sendOnce(key: string | undefined, mail: Mail) {
    if (!key) return { status: 'sent' as const, ...(await deps.mailer.send(mail)) };
    const slot = `notifications:idempotency:${key}`;
    const claimed = await deps.redis.set(slot, 'pending', 'EX', 60, 'NX');
    if (!claimed) {
      const seen = await deps.redis.get(slot);
      if (seen && seen !== 'pending') return { status: 'duplicate' as const, messageId: seen };
      throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still being processed; retry shortly.');
    }
    try {
      const { messageId } = await deps.mailer.send(mail);
      await deps.redis.set(slot, messageId, 'EX', IDEMPOTENCY_TTL_S);
      return { status: 'sent' as const, messageId };
    } catch (err) {
      await deps.redis.del(slot);
      throw new AppError('BAD_GATEWAY', 'The mail relay did not accept the message; retry later.', {
        cause: (err as Error).message,
      });
    }
  }

  app.get('/healthz', { schema: { response: { 200: Type.Object({ status: Type.Literal('ok') }) } } }, async () => ({
    status: 'ok' as const,
  }));

  // consumers report the key they hold here (a rotation's switch proof, domain/service-keys/holders.ts)
  registerServiceKeyCheck(app as unknown as FastifyInstance, deps.serviceKeys);
  await app.register(async (instance) => {
    const v1 = instance.withTypeProvider<TypeBoxTypeProvider>();
    v1.addHook('onRequest', requireServiceKey(deps.serviceKeys));

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
        const result = await sendOnce(
          req.headers['idempotency-key'],
          welcomeEmail({ ...req.body, appUrl: deps.appUrl }),
        );
        req.log.info({ workspace: req.body.workspace, status: result.status }, 'welcome e-mail');
        return result;
      },
    );

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
      async (req) => sendOnce(req.headers['idempotency-key'], req.body),
    );

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
        sendOnce(req.headers['idempotency-key'], {
          to: req.body.to,
          subject: `[${req.body.severity.toUpperCase()}] ${req.body.title}`,
          text: req.body.message,
          headers: { 'X-Plana-Severity': req.body.severity },
        }),
    );
  });

  return app;
}
