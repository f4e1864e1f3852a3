/**
 * "Open ERP" from the portal: the person signed in to the portal gets a single-use ticket (60 s,
 * kept in Redis by its hash) that the platform's OpenID provider redeems for a short-lived signed
 * cookie on its own origin; while it lasts, the provider's login page signs them in without asking
 * for their password again (services/auth/oidc-interactions.ts), and the browser goes on to the
 * ERP's sign-in through the provider (erp-sign-in.ts, erpSignInStartUrl), which lands them in the
 * ERP's web client. Never logged: the ticket, the cookie.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Redis } from 'ioredis';
import { purposeKey } from '../../lib/secret-box.js';

export const HANDOFF_TICKET_TTL_SECONDS = 60;
export const HANDOFF_COOKIE = 'plana_erp_handoff';
export const HANDOFF_COOKIE_TTL_SECONDS = 300;

const ticketKey = (ticket: string) => `plana:erp-handoff:${createHash('sha256').update(ticket).digest('base64url')}`;

export interface Handoff {
  userId: string;
  /** Where the browser goes once the provider knows them: the tenant ERP's sign-in at the provider. */
  target: string;
}

export async function issueErpHandoff(redis: Redis, handoff: Handoff): Promise<string> {
  const ticket = randomBytes(32).toString('base64url');
  await redis.set(ticketKey(ticket), JSON.stringify(handoff), 'EX', HANDOFF_TICKET_TTL_SECONDS);
  return ticket;
}

/** The ticket's hand-off, once (a second use, an expired or made-up ticket: undefined). */
export async function redeemErpHandoff(redis: Redis, ticket: string): Promise<Handoff | undefined> {
  const raw = await redis.getdel(ticketKey(ticket));
  return raw ? (JSON.parse(raw) as Handoff) : undefined;
}

const mac = (secretsKey: string, payload: string) =>
  createHmac('sha256', Buffer.from(purposeKey(secretsKey, 'erp-handoff-cookie'), 'base64'))
    .update(payload)
    .digest('base64url');

/** The cookie's value: the account and its expiry, signed. */
export function handoffCookieValue(secretsKey: string, userId: string, now = Date.now()): string {
  const payload = `${userId}.${Math.floor(now / 1000) + HANDOFF_COOKIE_TTL_SECONDS}`;
  return `${payload}.${mac(secretsKey, payload)}`;
}

/** The account a cookie value names, while it is valid. */
export function handedOffAccount(secretsKey: string, value: string | undefined, now = Date.now()): string | undefined {
  const [userId, exp, sig] = (value ?? '').split('.');
  if (!userId || !exp || !sig) return undefined;
  const expected = Buffer.from(mac(secretsKey, `${userId}.${exp}`));
  const given = Buffer.from(sig);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  return Number(exp) * 1000 > now ? userId : undefined;
}
