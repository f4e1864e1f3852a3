/**
 * Service-to-service authentication (specification §2.2, §5.4): the caller sends its key in
 * `X-API-Key`; the target looks the key's SHA-256 up among the keys registered for it
 * (key-registry.ts, verifier.ts). The key itself never reaches a log line, an error body or a table.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors.js';
import { SERVICE_KEY_CHECK_PATH } from './inventory.js';

/** A new key: 32 random bytes, hex (§2.2). */
export const generateServiceKey = () => randomBytes(32).toString('hex');
/** A new public key id: `sk_` + 8 hex characters. */
export const newKeyId = () => `sk_${randomBytes(4).toString('hex')}`;
/** The SHA-256 of a key: a fast hash is enough for 256 random bits (nothing to brute-force). */
export const hashServiceKey = (key: string) => createHash('sha256').update(key).digest();

/** Who called, as the request carries it for logs (never the key). */
export interface ServiceCallerIdentity {
  caller: string;
  keyId: string;
}

/** What the shared hook needs: the verifier of one target (verifier.ts). */
export interface ServiceKeyCheck {
  identify(given: string): ServiceCallerIdentity | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by requireServiceKey: the internal caller and the id of the key it used. */
    serviceCaller?: ServiceCallerIdentity;
  }
}

/**
 * The Fastify onRequest hook every service uses: lets through callers whose `X-API-Key` is
 * registered (pending, current or previous) for this target and, when `callers` is given, belongs
 * to one of them. Everything else gets the same 401 problem.
 */
export function requireServiceKey(check: ServiceKeyCheck | (() => ServiceKeyCheck), callers?: readonly string[]) {
  const verifier = typeof check === 'function' ? check : () => check;
  return async (req: FastifyRequest, _reply: FastifyReply) => {
    const given = req.headers['x-api-key'];
    if (typeof given !== 'string' || given.length === 0) {
      throw new AppError('UNAUTHORIZED', 'This endpoint needs a service key in the X-API-Key header.');
    }
    const who = verifier().identify(given);
    if (!who || (callers && !callers.includes(who.caller))) {
      throw new AppError('UNAUTHORIZED', 'The service key in X-API-Key is not valid.');
    }
    // the request's log line names the caller and key id (lib/http.ts OneLinePerRequest)
    req.serviceCaller = who;
  };
}

/**
 * `GET /.well-known/service-key`: checks X-API-Key with the target's verifier, for any caller
 * registered for it, and answers who it is (caller and key id, never the key); 401 otherwise.
 * Consumer processes report the key they hold here (holders.ts), so the report lands in the
 * target's usage records like any call: the evidence of a rotation's `holders` switch proof.
 */
export function registerServiceKeyCheck(
  app: FastifyInstance,
  check: ServiceKeyCheck | (() => ServiceKeyCheck),
  opts: { hide?: boolean } = {},
) {
  app.get(
    SERVICE_KEY_CHECK_PATH,
    {
      onRequest: requireServiceKey(check),
      schema: {
        ...(opts.hide ? { hide: true } : {}),
        summary:
          'The service key in X-API-Key is accepted: who it belongs to (consumers report the key they hold here)',
        response: {
          200: {
            type: 'object',
            properties: { caller: { type: 'string' }, keyId: { type: 'string' } },
            required: ['caller', 'keyId'],
            additionalProperties: false,
          },
        },
      },
    },
    async (req) => ({ caller: req.serviceCaller!.caller, keyId: req.serviceCaller!.keyId }),
  );
}
