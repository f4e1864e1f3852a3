/**
 * Refusals that explain themselves: each case a person met, over real HTTP against the account
 * API (and the banking service behind it), answers in a sentence or two what was wrong and what is
 * accepted, in the API's own terms: no regular expressions, no validator phrasing, no alternatives
 * the caller did not mean, no list of hundreds of values, no path of an internal service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { startBanking } from '../../../services/banking/server.js';
import { freePort } from '../../../scripts/local-servers.js';
import type { TestApi } from '../../support/api.js';
import { startApiWithBanking } from '../../support/banking.js';
import { adminOfNewWorkspace, call } from '../../support/workspace-api.js';
import { testKeys } from '../../support/service-keys.js';

let api: TestApi;
let banking: Awaited<ReturnType<typeof startBanking>>;
let admin: Awaited<ReturnType<typeof adminOfNewWorkspace>>;

/** What a person should never have to read in a problem. */
function expectPlainWords(detail: string) {
  expect(detail).not.toMatch(
    /\^|\[a-z|\$"|must NOT|must match|anyOf|oneOf|must have required property|additional properties/,
  );
  expect(detail.length).toBeLessThan(400);
}

beforeAll(async () => {
  ({ api, banking } = await startApiWithBanking({ banks: async () => `sandbox=http://127.0.0.1:${await freePort()}` }));
  admin = await adminOfNewWorkspace(api.base, api.pool);
});

afterAll(async () => {
  await banking?.close();
  await api?.close();
});

const ops = { 'x-api-key': testKeys.operator };

describe('refusals in words', () => {
  it('an invalid TenantClient name (describe tenant NoSuch): what a name is, not its regular expression', async () => {
    const res = await call(api.base, 'GET', '/api/ops/tenant-clients/NoSuch', { headers: ops });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(
      'params.name must be a DNS label: lowercase letters a-z, digits and hyphens, starting and ending with a letter or digit, at most 30 characters (e.g. acme or acme-2), not "NoSuch".',
    );
    expectPlainWords(res.body.detail);
  });

  it('a webhook replay with {"since":"yesterday"}: the one field at fault, and the format it takes', async () => {
    const res = await call(api.base, 'POST', '/api/portal/webhooks/3f2b8c1e-5d4a-4c1b-9a7e-0b6c2d1e4f5a/replay', {
      token: admin.accessToken,
      headers: { 'x-workspace': admin.workspace.slug },
      body: { since: 'yesterday' },
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(
      'body.since must be a date and time (RFC 3339, e.g. 2026-01-31T09:00:00Z), not "yesterday".',
    );
    expect(res.body.errors).toEqual([{ field: 'body.since', message: expect.stringContaining('RFC 3339') }]);
  });

  it('timeZone "CEST" in the portal settings: an example and where the list is, not 400 zone names twice', async () => {
    const res = await call(api.base, 'PUT', `/api/portal/settings?workspace=${admin.workspace.slug}`, {
      token: admin.accessToken,
      body: { timeZone: 'CEST' },
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(
      /^body\.timeZone must be an IANA time zone name such as Europe\/Zurich, America\/New_York or UTC, not "CEST" \(\d+ values are accepted; the API document at \/docs lists them\)\.$/,
    );
    expect(JSON.stringify(res.body)).not.toContain('Africa/Abidjan');
    expect(JSON.stringify(res.body).length).toBeLessThan(1000);
  });

  it('a body sent as text/plain: 415 naming the type the route accepts, not a parser error', async () => {
    const asText = await fetch(`${api.base}/api/ops/users`, {
      method: 'POST',
      headers: { ...ops, 'content-type': 'text/plain' },
      body: 'email: ada@acme.test',
    });
    expect(asText.status).toBe(415);
    expect((await asText.json()).detail).toBe(
      'This endpoint does not accept the content type "text/plain"; it accepts application/json.',
    );
  });

  it('an unknown bank: the banks there are, not a path of the internal banking service', async () => {
    const key = await call(api.base, 'POST', `/api/portal/apikeys?workspace=${admin.workspace.slug}`, {
      token: admin.accessToken,
      body: { name: 'bank', scopes: ['banking:read'] },
    });
    const res = await call(api.base, 'GET', '/api/banking/no-such-bank/accounts', { token: key.body.token });
    expect(res.status).toBe(404);
    expect(res.body.detail).toBe('There is no bank "no-such-bank" here; the banks are "sandbox".');
  });

  it('an empty list where at least one item is needed: "at least one", not validator phrasing', async () => {
    const res = await call(api.base, 'POST', '/api/portal/webhooks', {
      token: admin.accessToken,
      headers: { 'x-workspace': admin.workspace.slug },
      body: { url: 'https://hooks.example.com/plana', eventTypes: [] },
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('body.eventTypes must have at least one item.');
    expectPlainWords(res.body.detail);
  });
});
