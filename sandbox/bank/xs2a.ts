/** NextGenPSD2's request ids and refusals (`tppMessages`), shared by every route of the bank. */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

/** A refusal in NextGenPSD2's terms: an HTTP status and a `tppMessages` code. */
export class PsuError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    text: string,
  ) {
    super(text);
  }
}

export const tppMessages = (code: string, text: string) => ({ tppMessages: [{ category: 'ERROR', code, text }] });

export const validRequestId = (v: unknown): v is string =>
  typeof v === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);
/** The request's X-Request-ID, or one of the bank's own when it has none that is a UUID. */
export const requestIdOf = (req: FastifyRequest) => {
  const sent = req.headers['x-request-id'];
  return validRequestId(sent) ? sent : randomUUID();
};
