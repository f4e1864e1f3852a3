/** The portal hand-off cookie (domain/identity/erp-handoff.ts): only an untampered, unexpired one names an account. */
import { describe, expect, it } from 'vitest';
import { HANDOFF_COOKIE_TTL_SECONDS, handedOffAccount, handoffCookieValue } from '../../domain/identity/erp-handoff.js';

const key = Buffer.alloc(32, 7).toString('base64');
const otherKey = Buffer.alloc(32, 8).toString('base64');
const user = '7d3c1a0e-1111-4222-8333-944455556666';

describe('the hand-off cookie', () => {
  it('names its account until it expires', () => {
    const now = Date.now();
    const value = handoffCookieValue(key, user, now);
    expect(handedOffAccount(key, value, now)).toBe(user);
    expect(handedOffAccount(key, value, now + (HANDOFF_COOKIE_TTL_SECONDS + 1) * 1000)).toBeUndefined();
  });

  it('names nobody when tampered with, signed with another key, or malformed', () => {
    const value = handoffCookieValue(key, user);
    const [, exp, sig] = value.split('.');
    expect(handedOffAccount(key, `00000000-0000-4000-8000-000000000000.${exp}.${sig}`)).toBeUndefined();
    expect(handedOffAccount(key, `${user}.${Number(exp) + 3600}.${sig}`)).toBeUndefined();
    expect(handedOffAccount(otherKey, value)).toBeUndefined();
    for (const bad of [undefined, '', 'x', `${user}.${exp}`]) expect(handedOffAccount(key, bad)).toBeUndefined();
  });
});
