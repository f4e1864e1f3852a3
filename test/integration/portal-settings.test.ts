/** Workspace settings and integrations over real HTTP: members read, admins write, validation, isolation. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import { addUser, adminOfNewWorkspace, call, createKey, login } from '../support/workspace-api.js';

let api: TestApi;
let base: string;

beforeAll(async () => {
  api = await startTestApi();
  base = api.base;
});
afterAll(() => api?.close());

async function workspaceWithMember() {
  const a = await adminOfNewWorkspace(base, api.pool);
  const member = await login(base, await addUser(api.pool, [{ workspaceId: a.workspace.id, role: 'member' }]));
  return { ...a, member };
}

describe('GET/PUT /api/portal/settings', () => {
  it('has defaults; an admin changes them (canonical locale, IANA zone, partial preferences) and a member reads them', async () => {
    const a = await workspaceWithMember();
    const first = await call(base, 'GET', '/api/portal/settings', { token: a.member });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({
      displayName: `Workspace ${a.workspace.slug}`,
      locale: 'en',
      timeZone: 'UTC',
      notifications: { billing: true, integrations: true, productUpdates: false },
      updatedAt: null,
    });
    const put = await call(base, 'PUT', '/api/portal/settings', {
      token: a.accessToken,
      body: {
        displayName: 'Acme GmbH',
        locale: 'de-ch',
        timeZone: 'Europe/Zurich',
        notifications: { productUpdates: true },
      },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      displayName: 'Acme GmbH',
      locale: 'de-CH',
      timeZone: 'Europe/Zurich',
      notifications: { billing: true, integrations: true, productUpdates: true },
    });
    // a later partial change keeps the rest
    const again = await call(base, 'PUT', '/api/portal/settings', {
      token: a.accessToken,
      body: { notifications: { billing: false } },
    });
    expect(again.body).toMatchObject({
      locale: 'de-CH',
      timeZone: 'Europe/Zurich',
      notifications: { billing: false, productUpdates: true },
    });
    const read = await call(base, 'GET', '/api/portal/settings', { token: a.member });
    expect(read.body).toMatchObject({ displayName: 'Acme GmbH', locale: 'de-CH', notifications: { billing: false } });
    // the display name is the workspace's name everywhere
    expect((await call(base, 'GET', '/api/auth/me', { token: a.member })).body.workspaces[0].name).toBe('Acme GmbH');
  });

  it('has no preference for security and service notices: turning them off is a 400, and nothing is written', async () => {
    const a = await workspaceWithMember();
    for (const notifications of [{ security: false }, { always: false }, { billing: false, suspension: false }]) {
      const res = await call(base, 'PUT', '/api/portal/settings', { token: a.accessToken, body: { notifications } });
      expect(res.status, JSON.stringify(notifications)).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect((await call(base, 'GET', '/api/portal/settings', { token: a.accessToken })).body).toMatchObject({
      updatedAt: null,
      notifications: { billing: true },
    });
  });

  it.each([
    ['an unknown time zone', { timeZone: 'Mars/Olympus_Mons' }, 'body.timeZone'],
    ['an abbreviation as time zone', { timeZone: 'CEST' }, 'body.timeZone'],
    ['an offset as time zone', { timeZone: '+02:00' }, 'body.timeZone'],
    ['a locale that is not BCP 47', { locale: 'english please' }, 'body.locale'],
    ['a blank display name', { displayName: '   ' }, 'body.displayName'],
  ])('refuses %s with 400 naming the field, and writes nothing', async (_label, body, field) => {
    const a = await workspaceWithMember();
    const res = await call(base, 'PUT', '/api/portal/settings', {
      token: a.accessToken,
      body: { ...body, notifications: { productUpdates: true } },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect((await call(base, 'GET', '/api/portal/settings', { token: a.accessToken })).body).toMatchObject({
      updatedAt: null,
      notifications: { productUpdates: false },
    });
  });

  it.each([
    ['an empty body', {}],
    ['an unknown field', { currency: 'CHF' }],
    ['an unknown preference', { notifications: { spam: true } }],
    ['a preference that is not a boolean', { notifications: { billing: 'yes' } }],
  ])('refuses %s with 400', async (_label, body) => {
    const a = await workspaceWithMember();
    expect((await call(base, 'PUT', '/api/portal/settings', { token: a.accessToken, body })).status).toBe(400);
  });

  it("members read but cannot write (403); another workspace's admin can do neither (403); keys get 403; no session 401", async () => {
    const a = await workspaceWithMember();
    const b = await adminOfNewWorkspace(base, api.pool);
    const key = (await createKey(base, a.accessToken, { name: 'all', scopes: ['*'] })).token;
    expect((await call(base, 'PUT', '/api/portal/settings', { token: a.member, body: { locale: 'fr' } })).status).toBe(
      403,
    );
    const asB = { token: b.accessToken, headers: { 'x-workspace': a.workspace.slug } };
    expect((await call(base, 'GET', '/api/portal/settings', asB)).status).toBe(403);
    expect((await call(base, 'PUT', '/api/portal/settings', { ...asB, body: { locale: 'fr' } })).status).toBe(403);
    expect((await call(base, 'GET', '/api/portal/settings', { token: key })).status).toBe(403);
    expect((await call(base, 'PUT', '/api/portal/settings', { token: key, body: { locale: 'fr' } })).status).toBe(403);
    expect((await call(base, 'GET', '/api/portal/settings')).status).toBe(401);
    expect((await call(base, 'GET', '/api/portal/settings', { token: a.accessToken })).body.locale).toBe('en');
  });
});

describe('GET /api/portal/integrations', () => {
  it('reports the ERP from the tenant phase and conditions, and the others honestly as not configured', async () => {
    const a = await workspaceWithMember();
    const tenant = a.workspace.slug;
    await api.pool.query(
      `INSERT INTO tenants (name, workspace_id, project_id, tier, erp_version, owner_email, owner_name) VALUES ($1, $2, 7, 'pro', '18', 'o@x.test', 'O')`,
      [tenant, a.workspace.id],
    );
    const before = await call(base, 'GET', '/api/portal/integrations', { token: a.member });
    expect(before.status).toBe(200);
    expect(before.body.items.find((i: { id: string }) => i.id === 'erp')).toMatchObject({ state: 'pending' });

    const conditions = [
      {
        type: 'Synced',
        status: 'False',
        reason: 'ReconcileError',
        message: 'template erp_tpl_pro_18 is missing',
        lastTransitionTime: new Date().toISOString(),
        observedGeneration: 1,
      },
      {
        type: 'Ready',
        status: 'False',
        reason: 'Unavailable',
        message: 'Unready resources: database',
        lastTransitionTime: new Date().toISOString(),
        observedGeneration: 1,
      },
    ];
    await api.pool.query(
      `INSERT INTO tenant_status (name, uid, spec, generation, phase, conditions, observed_generation) VALUES ($1, gen_random_uuid(), '{}', 1, 'Unavailable', $2, 1)`,
      [tenant, JSON.stringify(conditions)],
    );
    const res = await call(base, 'GET', '/api/portal/integrations', { token: a.member });
    expect(res.body.items.map((i: { id: string }) => i.id)).toEqual(['erp', 'bank-consents', 'webhooks', 'agents']);
    const erp = res.body.items[0];
    expect(erp).toMatchObject({
      state: 'degraded',
      details: { tenant, tier: 'pro', erpVersion: '18', phase: 'Unavailable', conditions },
    });
    expect(erp.summary).toContain('Unready resources: database');
    // nothing set up yet for the others
    expect(res.body.items.slice(1).map((i: { state: string }) => i.state)).toEqual([
      'not-configured',
      'not-configured',
      'not-configured',
    ]);

    await api.pool.query(`UPDATE tenant_status SET phase = 'Ready', conditions = '[]' WHERE name = $1`, [tenant]);
    const ready = await call(base, 'GET', '/api/portal/integrations', { token: a.accessToken });
    expect(ready.body.items[0]).toMatchObject({ state: 'connected', details: { phase: 'Ready' } });
  });

  it('bank consents, webhooks and agents report from their own records', async () => {
    const a = await workspaceWithMember();
    const ws = a.workspace.id;
    const states = async () =>
      Object.fromEntries(
        (
          (await call(base, 'GET', '/api/portal/integrations', { token: a.member })).body.items as {
            id: string;
            state: string;
            summary: string;
          }[]
        ).map((i) => [i.id, i]),
      );
    await api.pool.query(
      `INSERT INTO banking_consents (workspace_id, bank_id, bank_consent_sealed, status, access, recurring_indicator, valid_until, frequency_per_day)
                          VALUES ($1, 'sandbox', 'x', 'received', '{}', true, current_date + 90, 4)`,
      [ws],
    );
    await api.pool.query(
      `INSERT INTO webhook_endpoints (workspace_id, url, secret_sealed) VALUES ($1, 'https://hooks.example/a', 'x')`,
      [ws],
    );
    await api.pool.query(
      `INSERT INTO agent_executions (id, workspace_id, agent_id, mode, input_chars, model, outcome) VALUES (gen_random_uuid(), $1, 'finance', 'chat', 10, 'm', 'succeeded')`,
      [ws],
    );
    let now = await states();
    expect(now['bank-consents']).toMatchObject({ state: 'pending' });
    expect(now.webhooks).toMatchObject({ state: 'connected', summary: '1 endpoint(s) receiving events.' });
    expect(now.agents).toMatchObject({ state: 'connected', summary: '1 agent call(s) in the last 7 days.' });

    await api.pool.query(`UPDATE banking_consents SET status = 'valid' WHERE workspace_id = $1`, [ws]);
    await api.pool.query(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = '410 Gone' WHERE workspace_id = $1`,
      [ws],
    );
    now = await states();
    expect(now['bank-consents']).toMatchObject({ state: 'connected', summary: '1 valid consent(s): sandbox.' });
    expect(now.webhooks).toMatchObject({ state: 'disconnected' });
  });

  it('a workspace without a tenant has no ERP configured', async () => {
    const a = await workspaceWithMember();
    const res = await call(base, 'GET', '/api/portal/integrations', { token: a.accessToken });
    expect(res.body.items[0]).toMatchObject({ id: 'erp', state: 'not-configured' });
  });

  it("another workspace's admin 403, a key 403, no session 401", async () => {
    const a = await workspaceWithMember();
    const b = await adminOfNewWorkspace(base, api.pool);
    const key = (await createKey(base, a.accessToken, { name: 'all', scopes: ['*'] })).token;
    expect(
      (
        await call(base, 'GET', '/api/portal/integrations', {
          token: b.accessToken,
          headers: { 'x-workspace': a.workspace.slug },
        })
      ).status,
    ).toBe(403);
    expect((await call(base, 'GET', '/api/portal/integrations', { token: key })).status).toBe(403);
    expect((await call(base, 'GET', '/api/portal/integrations')).status).toBe(401);
  });
});
