/**
 * The ERP's web session cookie (Odoo's `session_id`), bound to the tenant host that issued it.
 *
 * One Odoo server serves every tenant database, and its sessions are one store: a session of one
 * tenant's database sent to another tenant's host reaches Odoo, whose dbfilter (`^%h$`) then logs
 * that session out, on its own host too. Odoo's behaviour is Odoo's; the ingress is the one part in
 * front of every tenant host that sees each session cookie Odoo issues, so the binding lives here:
 *
 * - every `Set-Cookie: session_id=<sid>` of the ERP leaves as `session_id=<sid>.<mac>`, the mac an
 *   HMAC-SHA256 of the host and the session id under a key derived from SECRETS_KEY (the same on
 *   every replica, nothing stored);
 * - a request's `session_id` whose mac is the request host's goes on to the ERP as `session_id=<sid>`;
 *   any other (issued for another host, forged, or without a mac) is left out: the request is signed
 *   out there, and the session stays valid on its own host.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const ERP_SESSION_COOKIE = 'session_id';
const PREFIX = `${ERP_SESSION_COOKIE}=`;

export class HostBoundSessions {
  private readonly key: Buffer;

  /** `keyBase64`: the ingress's key for this purpose (purposeKey of SECRETS_KEY). */
  constructor(keyBase64: string) {
    this.key = Buffer.from(keyBase64, 'base64');
  }

  private mac(host: string, sid: string): Buffer {
    return createHmac('sha256', this.key).update(`${host}\n${sid}`).digest();
  }

  /** One `Set-Cookie` value of the ERP's, its session (if it sets one) bound to `host`. */
  bind(setCookie: string, host: string): string {
    if (!setCookie.startsWith(PREFIX)) return setCookie;
    const end = setCookie.indexOf(';');
    const sid = setCookie.slice(PREFIX.length, end < 0 ? undefined : end);
    // an empty value is the ERP ending the session: nothing to bind
    if (sid === '') return setCookie;
    return `${PREFIX}${sid}.${this.mac(host, sid).toString('base64url')}${end < 0 ? '' : setCookie.slice(end)}`;
  }

  /** The ERP's `Set-Cookie` header (one value or several) with its sessions bound to `host`. */
  bindAll(header: string | string[], host: string): string[] {
    return [header].flat().map((c) => this.bind(c, host));
  }

  /**
   * The `Cookie` header to send on to the ERP for `host`: a session bound to it as the ERP issued it,
   * any other `session_id` left out (undefined when nothing is left).
   */
  admit(cookie: string | undefined, host: string): string | undefined {
    if (cookie === undefined || !cookie.includes(PREFIX)) return cookie;
    const kept: string[] = [];
    for (const part of cookie.split(';')) {
      const pair = part.trim();
      if (pair === '') continue;
      if (!pair.startsWith(PREFIX)) {
        kept.push(pair);
        continue;
      }
      const value = pair.slice(PREFIX.length);
      const dot = value.lastIndexOf('.');
      if (dot <= 0) continue;
      const sid = value.slice(0, dot);
      const given = Buffer.from(value.slice(dot + 1), 'base64url');
      const expected = this.mac(host, sid);
      if (given.length === expected.length && timingSafeEqual(given, expected)) kept.push(`${PREFIX}${sid}`);
    }
    return kept.length > 0 ? kept.join('; ') : undefined;
  }
}
