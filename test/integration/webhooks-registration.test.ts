/**
 * Webhook endpoints through the real API ("Registration" in the docs): admins and `webhooks:write`
 * keys manage their own workspace's endpoints only; the `whsec_` secret shows on create, reveal
 * and rotate, never in lists; URL rules refuse bad URLs with a problem and nothing written.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi({ WEBHOOK_ALLOW_HTTP: 'false', WEBHOOK_ALLOWED_ADDRESSES: '' });
});
afterAll(async () => t?.close());

const asAdmin = (token: string, slug: string) => ({ token, headers: { 'x-workspace': slug } });

it('an admin registers, lists, reads, changes and deletes an endpoint; the secret shows only on create and reveal', async () => {
  const { workspace, accessToken } = await adminOfNewWorkspace(t.base, t.pool);
  const created = await call(t.base, 'POST', '/api/portal/webhooks', {
    ...asAdmin(accessToken, workspace.slug),
    body: { url: 'https://hooks.example.com/plana', eventTypes: ['invoice.posted'], description: 'accounting' },
  });
  expect(created.status).toBe(201);
  expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  expect(Buffer.from(created.body.secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
  const id = created.body.endpoint.id;

  const list = await call(t.base, 'GET', '/api/portal/webhooks', asAdmin(accessToken, workspace.slug));
  expect(list.status).toBe(200);
  expect(list.body.endpoints).toHaveLength(1);
  expect(JSON.stringify(list.body)).not.toContain(created.body.secret.slice(6, 20));

  const patched = await call(t.base, 'PATCH', `/api/portal/webhooks/${id}`, {
    ...asAdmin(accessToken, workspace.slug),
    body: { eventTypes: null, enabled: false },
  });
  expect(patched.body).toMatchObject({ eventTypes: null, enabled: false });

  const revealed = await call(t.base, 'GET', `/api/portal/webhooks/${id}/secret`, asAdmin(accessToken, workspace.slug));
  expect(revealed.body).toEqual({ secret: created.body.secret, previousSecret: null, previousSecretExpiresAt: null });

  const rotated = await call(
    t.base,
    'POST',
    `/api/portal/webhooks/${id}/secret/rotate`,
    asAdmin(accessToken, workspace.slug),
  );
  expect(rotated.status).toBe(200);
  expect(rotated.body.secret).not.toBe(created.body.secret);
  expect(rotated.body.previousSecret).toBe(created.body.secret);
  expect(Date.parse(rotated.body.previousSecretExpiresAt)).toBeGreaterThan(Date.now());

  expect(
    (await call(t.base, 'DELETE', `/api/portal/webhooks/${id}`, asAdmin(accessToken, workspace.slug))).status,
  ).toBe(204);
  expect((await call(t.base, 'GET', `/api/portal/webhooks/${id}`, asAdmin(accessToken, workspace.slug))).status).toBe(
    404,
  );
});

it('a key with webhooks:write manages its own workspace only; other keys get 403; no secret reveal for keys', async () => {
  const a = await adminOfNewWorkspace(t.base, t.pool);
  const b = await adminOfNewWorkspace(t.base, t.pool);
  const key = await createKey(t.base, a.accessToken, { name: 'hooks', scopes: ['webhooks:write'] });
  const dashKey = await createKey(t.base, a.accessToken, { name: 'dash', scopes: ['dashboard:read'] });

  const created = await call(t.base, 'POST', '/api/portal/webhooks', {
    token: key.token,
    body: { url: 'https://a.example.com/h' },
  });
  expect(created.status).toBe(201);
  const list = await call(t.base, 'GET', '/api/portal/webhooks', { token: key.token });
  expect(list.body.endpoints.map((e: { id: string }) => e.id)).toEqual([created.body.endpoint.id]);

  const denied = await call(t.base, 'GET', '/api/portal/webhooks', { token: dashKey.token });
  expect(denied.status).toBe(403);
  expect(denied.body.detail).toContain('webhooks:write');

  // workspace B's admin cannot see A's endpoint
  const other = await call(
    t.base,
    'GET',
    `/api/portal/webhooks/${created.body.endpoint.id}`,
    asAdmin(b.accessToken, b.workspace.slug),
  );
  expect(other.status).toBe(404);
  // a key cannot reveal secrets (admins only)
  expect(
    (await call(t.base, 'GET', `/api/portal/webhooks/${created.body.endpoint.id}/secret`, { token: key.token })).status,
  ).toBe(403);
  // no credentials at all
  expect((await call(t.base, 'GET', '/api/portal/webhooks')).status).toBe(401);
});

it('refuses bad URLs with a 400 naming the rule, and writes nothing', async () => {
  const { workspace, accessToken } = await adminOfNewWorkspace(t.base, t.pool);
  const bad: [string, string][] = [
    ['http://hooks.example.com/h', 'https'],
    ['https://user:pw@hooks.example.com/h', 'credentials'],
    ['https://10.0.0.7/h', 'private'],
    ['https://127.0.0.1:8443/h', 'loopback'],
    ['https://169.254.169.254/latest/meta-data', 'linkLocal'],
    ['https://100.64.1.1/h', 'carrierGradeNat'],
    ['https://[::1]/h', 'loopback'],
    ['https://[::ffff:10.0.0.1]/h', 'private'],
    ['https://localhost/h', 'localhost'],
    [`https://example.com/${'a'.repeat(2100)}`, '2048'],
    ['not a url', 'absolute URL'],
  ];
  for (const [url, why] of bad) {
    const res = await call(t.base, 'POST', '/api/portal/webhooks', {
      ...asAdmin(accessToken, workspace.slug),
      body: { url },
    });
    expect(res.status, url).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body.detail, url).toContain(why);
  }
  const list = await call(t.base, 'GET', '/api/portal/webhooks', asAdmin(accessToken, workspace.slug));
  expect(list.body.endpoints).toEqual([]);
});

it('refuses event types outside the catalogue with a 400 listing the known ones, on create and on change, for admins and keys; nothing written', async () => {
  const { workspace, accessToken } = await adminOfNewWorkspace(t.base, t.pool);
  const key = await createKey(t.base, accessToken, { name: 'hooks', scopes: ['webhooks:write'] });
  const known = ['invoice.posted', 'payment.received', 'stock.changed'];
  const expectUnknown = (res: Awaited<ReturnType<typeof call>>, unknown: string) => {
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.body.detail).toContain(`"${unknown}"`);
    expect(res.body.detail).toContain('eventTypes');
    for (const k of known) expect(res.body.detail).toContain(k);
    expect(res.body.knownEventTypes).toEqual(known);
  };
  for (const caller of [asAdmin(accessToken, workspace.slug), { token: key.token }]) {
    expectUnknown(
      await call(t.base, 'POST', '/api/portal/webhooks', {
        ...caller,
        body: { url: 'https://hooks.example.com/h', eventTypes: ['invoice.paid'] },
      }),
      'invoice.paid',
    );
    expectUnknown(
      await call(t.base, 'POST', '/api/portal/webhooks', {
        ...caller,
        body: { url: 'https://hooks.example.com/h', eventTypes: ['invoice.posted', 'invoice.paid'] },
      }),
      'invoice.paid',
    );
  }
  expect(
    (await call(t.base, 'GET', '/api/portal/webhooks', asAdmin(accessToken, workspace.slug))).body.endpoints,
  ).toEqual([]);

  const created = await call(t.base, 'POST', '/api/portal/webhooks', {
    token: key.token,
    body: { url: 'https://hooks.example.com/h', eventTypes: ['payment.received'] },
  });
  expect(created.status).toBe(201);
  const id = created.body.endpoint.id;
  expectUnknown(
    await call(t.base, 'PATCH', `/api/portal/webhooks/${id}`, {
      token: key.token,
      body: { eventTypes: ['stock.changed', 'payment.recieved'] },
    }),
    'payment.recieved',
  );
  expectUnknown(
    await call(t.base, 'PATCH', `/api/portal/webhooks/${id}`, {
      ...asAdmin(accessToken, workspace.slug),
      body: { eventTypes: ['invoice.paid'], enabled: false },
    }),
    'invoice.paid',
  );
  // unchanged by the refused changes
  expect((await call(t.base, 'GET', `/api/portal/webhooks/${id}`, { token: key.token })).body).toMatchObject({
    eventTypes: ['payment.received'],
    enabled: true,
  });
  expect(
    (await call(t.base, 'PATCH', `/api/portal/webhooks/${id}`, { token: key.token, body: { eventTypes: known } })).body,
  ).toMatchObject({ eventTypes: known });
});
