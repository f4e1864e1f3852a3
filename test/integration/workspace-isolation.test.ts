/**
 * Workspace isolation, per attack class, in both directions (A → B and B → A), on one shared pair
 * of workspaces: each with an admin and a member logged in, a key of every scope (`*`), a webhook
 * endpoint with attempts, and execution-log entries. Nothing of one workspace can be read, changed
 * or deleted from the other, a foreign id answers exactly like an unknown one, and a request that
 * names the other workspace is refused rather than quietly served for the caller's own, and one
 * that names two workspaces is refused as ambiguous rather than answered for either.
 *
 * Elsewhere: every /api route's callers (no credentials, wrong role, wrong kind of key, the ops
 * routes without the operator key) in api/route-security.test.ts; the internal services without
 * keys in api/hostile-input-services.test.ts; forged and foreign workspace grants at the agents
 * and data services in agents-api.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, adminOfNewWorkspace, call, createKey, login, type HttpResult } from '../support/workspace-api.js';
import { linkIn, startPortal, type Portal } from '../support/portal.js';

interface Side {
  workspace: { id: string; slug: string };
  admin: { id: string; email: string; password: string };
  adminToken: string;
  member: { id: string };
  memberToken: string;
  key: { id: string; token: string; prefix: string };
  endpointId: string;
  attemptId: string;
  logCursor: string;
}

let portal: Portal;
let base: string;
let A: Side;
let B: Side;

async function side(): Promise<Side> {
  const { workspace, admin, accessToken } = await adminOfNewWorkspace(base, portal.pool);
  const member = await addUser(portal.pool, [{ workspaceId: workspace.id, role: 'member' }]);
  const key = await createKey(base, accessToken, { name: 'everything', scopes: ['*'] });
  const asAdmin = { token: accessToken, headers: { 'x-workspace': workspace.slug } };
  const endpoint = await call(base, 'POST', '/api/portal/webhooks', {
    ...asAdmin,
    body: { url: `https://hooks-${workspace.slug}.example.com/in` },
  });
  expect(endpoint.status).toBe(201);
  const endpointId = endpoint.body.endpoint.id as string;
  await portal.pool.query(
    `INSERT INTO webhook_attempts (endpoint_id, message_id, attempted_at, trigger, status_code, duration_ms, outcome, error, response_headers, response_excerpt)
     SELECT $1, 'msg_isolation_' || n, now() - n * interval '1 second', 'dispatcher', 204, 5, 'ok', NULL, '{}', '' FROM generate_series(1, 3) n`,
    [endpointId],
  );
  const attempts = await call(base, 'GET', `/api/portal/webhooks/${endpointId}/attempts`, asAdmin);
  for (let i = 0; i < 3; i++)
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(200);
  // the execution log is written every 100 ms here: wait for a second page
  let log = await call(base, 'GET', '/api/portal/execution-log?limit=1', asAdmin);
  for (let i = 0; i < 50 && !log.body.nextCursor; i++) {
    await new Promise((r) => setTimeout(r, 100));
    log = await call(base, 'GET', '/api/portal/execution-log?limit=1', asAdmin);
  }
  expect(log.body.nextCursor).toEqual(expect.any(String));
  return {
    workspace,
    admin,
    adminToken: accessToken,
    member,
    memberToken: await login(base, member),
    key,
    endpointId,
    attemptId: attempts.body.attempts[0].id,
    logCursor: log.body.nextCursor,
  };
}

beforeAll(async () => {
  portal = await startPortal({
    EXECUTION_LOG_FLUSH_MS: '100',
    WEBHOOK_ALLOW_HTTP: 'false',
    WEBHOOK_ALLOWED_ADDRESSES: '',
  });
  base = portal.base;
  [A, B] = [await side(), await side()];
});

afterAll(() => portal?.close());

/** Both directions: the attacker's side first, the target's second. */
const directions = (): [string, Side, Side][] => [
  ['A → B', A, B],
  ['B → A', B, A],
];
const admin = (s: Side, workspace = s.workspace.slug) => ({
  token: s.adminToken,
  headers: { 'x-workspace': workspace },
});
/** A problem's status, code and detail with the id in it replaced: what tells a foreign id from an unknown one. */
const shape = (res: HttpResult, id: string) => ({
  status: res.status,
  code: res.body?.code,
  detail: String(res.body?.detail ?? '').replaceAll(id, '<id>'),
});

describe('workspace isolation, both directions', () => {
  it("a key cannot reach the other workspace's routes by its slug (403), and reads nothing of it", async () => {
    for (const [dir, x, y] of directions()) {
      for (const path of [
        `/api/portal/odoo/${y.workspace.slug}/kpis`,
        `/api/portal/odoo/${y.workspace.slug}/cashflow`,
        `/api/portal/odoo/${y.workspace.slug}/alerts`,
      ]) {
        const res = await call(base, 'GET', path, { token: x.key.token });
        expect(res.status, `${dir} ${path}`).toBe(403);
        expect(res.body.detail, dir).toContain(`cannot reach workspace "${y.workspace.slug}"`);
      }
      const own = await call(base, 'GET', '/api/portal/webhooks', { token: x.key.token });
      expect(
        own.body.endpoints.map((e: { id: string }) => e.id),
        dir,
      ).toEqual([x.endpointId]);
    }
  });

  it("swapped ids: the other workspace's endpoint, key and member answer exactly like unknown ids, and stay as they were", async () => {
    for (const [dir, x, y] of directions()) {
      const unknown = randomUUID();
      const probes: [string, string, unknown?][] = [
        ['GET', '/api/portal/webhooks/:id'],
        ['PATCH', '/api/portal/webhooks/:id', { enabled: false }],
        ['GET', '/api/portal/webhooks/:id/attempts'],
        ['GET', '/api/portal/webhooks/:id/secret'],
        ['POST', '/api/portal/webhooks/:id/secret/rotate'],
        ['POST', '/api/portal/webhooks/:id/test'],
        ['POST', '/api/portal/webhooks/:id/replay', { messageId: 'msg_isolation_1' }],
        ['DELETE', '/api/portal/webhooks/:id'],
      ];
      for (const [method, route, body] of probes) {
        for (const as of [admin(x), { token: x.key.token }]) {
          const foreign = await call(base, method, route.replace(':id', y.endpointId), { ...as, body });
          const none = await call(base, method, route.replace(':id', unknown), { ...as, body });
          expect(foreign.status, `${dir} ${method} ${route}`).toBeGreaterThanOrEqual(400);
          expect(shape(foreign, y.endpointId), `${dir} ${method} ${route}`).toEqual(shape(none, unknown));
        }
      }
      const key = await call(base, 'DELETE', `/api/portal/apikeys/${y.key.id}`, admin(x));
      expect(shape(key, y.key.id), dir).toEqual(
        shape(await call(base, 'DELETE', `/api/portal/apikeys/${unknown}`, admin(x)), unknown),
      );
      for (const [method, body] of [
        ['PATCH', { role: 'admin' }],
        ['DELETE', undefined],
      ] as const) {
        const member = await call(base, method, `/api/portal/team/${y.member.id}`, { ...admin(x), body });
        const none = await call(base, method, `/api/portal/team/${unknown}`, { ...admin(x), body });
        expect(shape(member, y.member.id), `${dir} ${method} team`).toEqual(shape(none, unknown));
      }
      // all of it still there, unchanged
      const still = await call(base, 'GET', `/api/portal/webhooks/${y.endpointId}`, admin(y));
      expect(still.body, dir).toMatchObject({ id: y.endpointId, enabled: true });
      expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: y.key.token })).status, dir).toBe(200);
      const team = await call(base, 'GET', '/api/portal/team', admin(y));
      expect(
        team.body.members.find((m: { id: string }) => m.id === y.member.id),
        dir,
      ).toMatchObject({ role: 'member' });
    }
  });

  it('X-Workspace and ?workspace= naming the other workspace are refused with 403, for sessions and keys alike, and nothing is written', async () => {
    for (const [dir, x, y] of directions()) {
      const before = (await portal.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n;
      const body = { url: `https://probe-${randomUUID().slice(0, 8)}.example.com/in` };
      // the admin's session: not a member there
      expect((await call(base, 'GET', '/api/portal/webhooks', admin(x, y.workspace.slug))).status, dir).toBe(403);
      expect(
        (await call(base, 'GET', `/api/portal/team?workspace=${y.workspace.slug}`, { token: x.adminToken })).status,
        dir,
      ).toBe(403);
      // the key: refused, rather than acting on its own workspace as if it were the other
      const header = await call(base, 'POST', '/api/portal/webhooks', {
        token: x.key.token,
        headers: { 'x-workspace': y.workspace.slug },
        body,
      });
      expect(header.status, dir).toBe(403);
      expect(header.body.detail, dir).toContain(`cannot act on workspace "${y.workspace.slug}"`);
      const query = await call(base, 'POST', `/api/portal/webhooks?workspace=${y.workspace.slug}`, {
        token: x.key.token,
        body,
      });
      expect(query.status, dir).toBe(403);
      const byId = await call(base, 'GET', '/api/portal/webhooks', {
        token: x.key.token,
        headers: { 'x-workspace': y.workspace.id },
      });
      expect(byId.status, dir).toBe(403);
      expect((await portal.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n, dir).toBe(before);
      // naming its own workspace stays allowed
      expect(
        (
          await call(base, 'GET', '/api/portal/webhooks', {
            token: x.key.token,
            headers: { 'x-workspace': x.workspace.slug },
          })
        ).status,
        dir,
      ).toBe(200);
    }
  });

  it('a request naming two different workspaces (X-Workspace and ?workspace=, or ?workspace= twice) is refused as ambiguous: 400 naming both, for sessions and keys, nothing written', async () => {
    for (const [dir, x, y] of directions()) {
      const before = (await portal.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n;
      const both = [x.workspace.slug, y.workspace.slug];
      const expectAmbiguous = (res: HttpResult, what: string) => {
        expect(res.status, `${dir} ${what}`).toBe(400);
        expect(res.headers.get('content-type'), `${dir} ${what}`).toContain('application/problem+json');
        expect(res.body, `${dir} ${what}`).toMatchObject({ status: 400, code: 'BAD_REQUEST', workspaces: both });
        for (const slug of both) expect(res.body.detail, `${dir} ${what}`).toContain(`"${slug}"`);
      };
      // the admin's session, header and query (the header's workspace was answered)
      expectAmbiguous(
        await call(base, 'GET', `/api/portal/team?workspace=${y.workspace.slug}`, admin(x)),
        'session: header + query',
      );
      expectAmbiguous(
        await call(base, 'GET', `/api/portal/team?workspace=${x.workspace.slug}&workspace=${y.workspace.slug}`, {
          token: x.adminToken,
        }),
        'session: query twice',
      );
      expectAmbiguous(
        await call(base, 'GET', `/api/portal/execution-log?workspace=${y.workspace.slug}`, admin(x)),
        'session: execution log',
      );
      expectAmbiguous(
        await call(base, 'POST', `/api/portal/webhooks?workspace=${y.workspace.slug}`, {
          ...admin(x),
          body: { url: `https://probe-${randomUUID().slice(0, 8)}.example.com/in` },
        }),
        'session: webhook create',
      );
      // a key: its own workspace and the other one together
      expectAmbiguous(
        await call(base, 'POST', `/api/portal/webhooks?workspace=${y.workspace.slug}`, {
          token: x.key.token,
          headers: { 'x-workspace': x.workspace.slug },
          body: { url: `https://probe-${randomUUID().slice(0, 8)}.example.com/in` },
        }),
        'key: header + query',
      );
      expectAmbiguous(
        await call(base, 'GET', `/api/portal/webhooks?workspace=${x.workspace.slug}&workspace=${y.workspace.slug}`, {
          token: x.key.token,
        }),
        'key: query twice',
      );
      expect((await portal.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n, dir).toBe(before);
      // one workspace named twice is not ambiguous (and the key's own slug and id are one workspace)
      expect((await call(base, 'GET', `/api/portal/team?workspace=${x.workspace.slug}`, admin(x))).status, dir).toBe(
        200,
      );
      expect(
        (
          await call(base, 'GET', `/api/portal/webhooks?workspace=${x.workspace.id}`, {
            token: x.key.token,
            headers: { 'x-workspace': x.workspace.slug },
          })
        ).status,
        dir,
      ).toBe(200);
    }
  });

  it("forged and foreign cursors: the other workspace's cursor is refused as a forged one (400), its attempt id shows nothing of it", async () => {
    for (const [dir, x, y] of directions()) {
      const forged = Buffer.from(`${new Date().toISOString()}|1`).toString('base64url');
      const refusedForged = await call(base, 'GET', `/api/portal/execution-log?cursor=${forged}`, admin(x));
      expect(refusedForged.status, dir).toBe(400);
      const foreign = await call(
        base,
        'GET',
        `/api/portal/execution-log?limit=50&cursor=${encodeURIComponent(y.logCursor)}`,
        admin(x),
      );
      expect(foreign.status, dir).toBe(400);
      expect(foreign.headers.get('content-type'), dir).toContain('application/problem+json');
      expect(foreign.body, dir).not.toHaveProperty('items');
      expect({ type: foreign.body.type, code: foreign.body.code, detail: foreign.body.detail }, dir).toEqual({
        type: refusedForged.body.type,
        code: refusedForged.body.code,
        detail: refusedForged.body.detail,
      });
      // the cursor still pages its own workspace's log
      expect(
        (
          await call(
            base,
            'GET',
            `/api/portal/execution-log?limit=50&cursor=${encodeURIComponent(y.logCursor)}`,
            admin(y),
          )
        ).status,
        dir,
      ).toBe(200);
      const attempts = await call(
        base,
        'GET',
        `/api/portal/webhooks/${x.endpointId}/attempts?before=${y.attemptId}`,
        admin(x),
      );
      expect(attempts.status, dir).toBe(200);
      expect(attempts.body.attempts, dir).toEqual([]);
      const own = await call(base, 'GET', `/api/portal/webhooks/${x.endpointId}/attempts`, admin(x));
      expect(
        own.body.attempts.map((a: { id: string }) => a.id),
        dir,
      ).not.toContain(y.attemptId);
    }
  });

  it("a member's session cannot manage either workspace: 403 on its own admin routes and on the other's", async () => {
    for (const [dir, x, y] of directions()) {
      for (const ws of [x.workspace.slug, y.workspace.slug]) {
        const res = await call(base, 'POST', '/api/portal/apikeys', {
          token: x.memberToken,
          headers: { 'x-workspace': ws },
          body: { name: 'probe' },
        });
        expect(res.status, `${dir} in ${ws}`).toBe(403);
      }
      expect(
        (
          await call(base, 'GET', '/api/portal/execution-log', {
            token: x.memberToken,
            headers: { 'x-workspace': y.workspace.slug },
          })
        ).status,
        dir,
      ).toBe(403);
    }
  });

  it('a revoked key gets the same 401 as an unknown one, on its own workspace and the other', async () => {
    for (const [dir, x, y] of directions()) {
      const key = await createKey(base, x.adminToken, { name: 'short-lived', scopes: ['*'] });
      expect((await call(base, 'DELETE', `/api/portal/apikeys/${key.id}`, admin(x))).status, dir).toBe(204);
      const unknown = `ws_live_${'A'.repeat(52)}`;
      for (const path of [
        '/api/portal/apikeys/self',
        `/api/portal/odoo/${x.workspace.slug}/kpis`,
        `/api/portal/odoo/${y.workspace.slug}/kpis`,
        '/api/portal/webhooks',
      ]) {
        const revoked = await call(base, 'GET', path, { token: key.token });
        expect(revoked.status, `${dir} ${path}`).toBe(401);
        expect(shape(revoked, ''), `${dir} ${path}`).toEqual(
          shape(await call(base, 'GET', path, { token: unknown }), ''),
        );
      }
    }
  });

  it('a removed member loses the workspace at once, and never had the other', async () => {
    for (const [dir, x, y] of directions()) {
      const user = await addUser(portal.pool, [{ workspaceId: x.workspace.id, role: 'member' }]);
      const token = await login(base, user);
      expect(
        (await call(base, 'GET', '/api/portal/team', { token, headers: { 'x-workspace': x.workspace.slug } })).status,
        dir,
      ).toBe(200);
      expect((await call(base, 'DELETE', `/api/portal/team/${user.id}`, admin(x))).status, dir).toBe(204);
      // refused in both (401 when the removal also ended the user's sessions)
      for (const ws of [x.workspace.slug, y.workspace.slug]) {
        expect([401, 403], `${dir} in ${ws}`).toContain(
          (await call(base, 'GET', '/api/portal/team', { token, headers: { 'x-workspace': ws } })).status,
        );
      }
    }
  });

  it('an invitation joins only its own workspace, once: replayed, it is refused and opens neither', async () => {
    for (const [dir, x, y] of directions()) {
      const email = `invitee-${randomUUID().slice(0, 8)}@example.test`;
      expect(
        (await call(base, 'POST', '/api/portal/team/invite', { ...admin(x), body: { email, role: 'admin' } })).status,
        dir,
      ).toBe(201);
      const { token } = linkIn(portal.mailsTo(email).at(-1), `${base}/w/`);
      const body = { token, name: 'Invitee', password: 'correct horse battery' };
      const accepted = await call(base, 'POST', '/api/portal/team/invitations/accept', { body });
      expect(accepted.status, dir).toBe(200);
      expect(accepted.body.workspace, dir).toMatchObject({ slug: x.workspace.slug });
      const replayed = await call(base, 'POST', '/api/portal/team/invitations/accept', { body });
      expect(replayed.status, dir).toBe(409);
      expect(replayed.body, dir).not.toHaveProperty('accessToken');
      // the invitee is an admin of x only
      expect(
        (
          await call(base, 'GET', '/api/portal/execution-log', {
            token: accepted.body.accessToken,
            headers: { 'x-workspace': y.workspace.slug },
          })
        ).status,
        dir,
      ).toBe(403);
      expect(
        (
          await call(base, 'GET', '/api/portal/execution-log', {
            token: accepted.body.accessToken,
            headers: { 'x-workspace': x.workspace.slug },
          })
        ).status,
        dir,
      ).toBe(200);
    }
  });
});
