/**
 * Service-to-service authentication (specification §5.4): the caller sends its key in
 * `X-API-Key`; the target compares it in constant time with the keys it accepts (two during a
 * rotation). The key itself never reaches a log line or an error body.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function keyMatches(given: string, accepted: readonly string[]): boolean {
  const g = digest(given);
  let ok = false;
  for (const k of accepted) ok = timingSafeEqual(g, digest(k)) || ok;
  return ok;
}

/** A Fastify onRequest hook that lets only callers with an accepted `X-API-Key` through. */
export function requireServiceKey(accepted: () => readonly string[]) {
  return async (req: FastifyRequest, _reply: FastifyReply) => {
    const given = req.headers['x-api-key'];
    if (typeof given !== 'string' || given.length === 0) {
      throw new AppError('UNAUTHORIZED', 'This endpoint needs a service key in the X-API-Key header.');
    }
    if (!keyMatches(given, accepted())) {
      throw new AppError('UNAUTHORIZED', 'The service key in X-API-Key is not valid.');
    }
  };
}
