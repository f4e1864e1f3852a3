/** lib/redact.ts: what a log line may show of a text or a URL. */
import { describe, expect, it } from 'vitest';
import { redactText, redactUrl } from '../../lib/redact.js';

describe('redactText', () => {
  it('replaces every kind of credential and e-mail address', () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    const serviceKey = 'ab'.repeat(32);
    expect(
      redactText(
        `postgres://plana:hunter2@db/x, authorization: Bearer abc.def-123, ${jwt}, ws_live_ABCDEFGH12345678, ` +
          `whsec_c2VjcmV0, password=s3cret, ${serviceKey}, owner@acme.test`,
      ),
    ).toBe(
      'postgres://[redacted]@db/x, authorization: Bearer [redacted], [redacted-jwt], ws_live_ABCDEFGH[redacted], ' +
        'whsec_[redacted], password=[redacted], [redacted], [email]',
    );
  });

  it('finds them whatever their case where the pattern ignores case', () => {
    expect(redactText('BEARER xyz123456 and Password: hunter2')).toBe('BEARER [redacted] and Password: [redacted]');
  });

  it('passes a text without any unchanged (the same string)', () => {
    const text = '/api/portal/odoo/acme/kpis';
    expect(redactText(text)).toBe(text);
    expect(redactUrl('/api/portal/odoo/acme/cashflow?months=6')).toBe('/api/portal/odoo/acme/cashflow?months=6');
  });
});

describe('redactUrl', () => {
  it('redacts the value of a credential parameter and credentials in the path', () => {
    expect(redactUrl('/cb?code=abc&state=xyz&page=2')).toBe('/cb?code=[redacted]&state=[redacted]&page=2');
    expect(redactUrl('/x/ws_live_ABCDEFGH12345678?api_key=k')).toBe('/x/ws_live_ABCDEFGH[redacted]?api_key=[redacted]');
  });
});
