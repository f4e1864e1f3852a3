/**
 * The team over real HTTP: the account API, the notifications service and the SMTP sink on the
 * run's real PostgreSQL and Redis. Invitations are read from the mails the sink caught, as the
 * invited person would: accepted once and never twice, expired, revoked, re-invited.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, adminOfNewWorkspace, call, createKey, login } from '../support/workspace-api.js';
import { linkIn, startPortal, type Portal } from '../support/portal.js';

let portal: Portal;
let base: string;

beforeAll(async () => {
  portal = await startPortal();
  base = portal.base;
});
afterAll(() => portal?.close());

const newAddress = () => `invitee-${randomUUID().slice(0, 8)}@example.test`;

async function invite(token: string, email: string, role?: 'admin' | 'member', slug?: string) {
  return call(base, 'POST', '/api/portal/team/invite', {
    token,
    body: { email, ...(role ? { role } : {}) },
    headers: slug ? { 'x-workspace': slug } : {},
  });
}

function invitationToken(email: string, nth = -1) {
  const mails = portal.mailsTo(email);
  return linkIn(mails.at(nth), `${base}/w/`);
}

const accept = (body: Record<string, unknown>) => call(base, 'POST', '/api/portal/team/invitations/accept', { body });
const check = (token: string) => call(base, 'POST', '/api/portal/team/invitations/check', { body: { token } });

describe('inviting and accepting', () => {
  it('mails a single-use link to /w/<slug>/join; accepting creates the user, joins the workspace and logs in', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const email = newAddress();
    const res = await invite(a.accessToken, email, 'member');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      email,
      role: 'member',
      status: 'pending',
      sentCount: 1,
      invitedBy: { id: a.admin.id },
    });
    expect(res.body).not.toHaveProperty('token');

    const [mail] = portal.mailsTo(email);
    expect(mail!.subject).toContain(`Workspace ${a.workspace.slug}`);
    const { link, token } = invitationToken(email);
    expect(link.startsWith(`${base}/w/${a.workspace.slug}/join#token=`)).toBe(true);
    // the token is stored hashed only
    const stored = await portal.pool.query('SELECT token_hash FROM workspace_invitations WHERE id = $1', [res.body.id]);
    expect(stored.rows[0].token_hash).not.toContain(token);

    // the link opens the portal's accept page, and opening it changes nothing
    const page = await fetch(new URL(`/w/${a.workspace.slug}/join`, base), { redirect: 'manual' });
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe(`/app/w/${a.workspace.slug}/join`);
    expect((await fetch(new URL('/w/no-such-workspace/join', base), { redirect: 'manual' })).status).toBe(404);

    const accepted = await accept({ token, name: 'Grace Hopper', password: 'correct horse battery' });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({
      tokenType: 'Bearer',
      user: { email, name: 'Grace Hopper' },
      accountCreated: true,
      workspace: { slug: a.workspace.slug, role: 'member' },
    });
    expect(accepted.cookies.some((c) => c.startsWith('plana_refresh='))).toBe(true);

    // the new member is logged in, sees the team, and can log in with the chosen password
    const team = await call(base, 'GET', '/api/portal/team', { token: accepted.body.accessToken });
    expect(team.status).toBe(200);
    expect(team.body.members.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual(
      expect.arrayContaining([
        [a.admin.email, 'admin'],
        [email, 'member'],
      ]),
    );
    expect(team.body).not.toHaveProperty('invitations');
    expect(await login(base, { email, password: 'correct horse battery' })).toBeTruthy();
  });

  it('is accepted once and never twice, also when two accepts race', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const email = newAddress();
    expect((await invite(a.accessToken, email, 'admin')).status).toBe(201);
    const { token } = invitationToken(email);
    const body = { token, name: 'Ada', password: 'a long enough password' };
    const both = await Promise.all([accept(body), accept(body)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    const again = await accept(body);
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('accepted already');
    const users = await portal.pool.query('SELECT count(*)::int AS n FROM users WHERE lower(email) = lower($1)', [
      email,
    ]);
    expect(users.rows[0].n).toBe(1);
    const team = await call(base, 'GET', '/api/portal/team', { token: a.accessToken });
    expect(team.body.members.find((m: { email: string }) => m.email === email).role).toBe('admin');
    // an accepted invitation is no longer listed, and cannot be revoked
    expect(team.body.invitations.find((i: { email: string }) => i.email === email)).toBeUndefined();
  });

  it('refuses an expired link with 410 and lets the admin re-invite', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const email = newAddress();
    const created = await invite(a.accessToken, email);
    const { token } = invitationToken(email);
    await portal.pool.query(`UPDATE workspace_invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      created.body.id,
    ]);

    const late = await accept({ token, name: 'Late', password: 'a long enough password' });
    expect(late.status).toBe(410);
    expect(late.body.detail).toContain('expired');
    const listed = await call(base, 'GET', '/api/portal/team', { token: a.accessToken });
    expect(listed.body.invitations.find((i: { id: string }) => i.id === created.body.id).status).toBe('expired');

    const resent = await call(base, 'POST', `/api/portal/team/invitations/${created.body.id}/resend`, {
      token: a.accessToken,
    });
    expect(resent.status).toBe(200);
    expect(resent.body).toMatchObject({ status: 'pending', sentCount: 2 });
    const fresh = invitationToken(email);
    expect(fresh.token).not.toBe(token);
    expect((await accept({ token: fresh.token, name: 'On time', password: 'a long enough password' })).status).toBe(
      200,
    );
  });

  it('re-invite: the new link works, the old one is dead (404)', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const email = newAddress();
    const created = await invite(a.accessToken, email);
    const first = invitationToken(email).token;
    // inviting the same address again is refused: re-invite that invitation instead
    const twice = await invite(a.accessToken, email);
    expect(twice.status).toBe(409);
    expect(twice.body.invitationId).toBe(created.body.id);

    expect(
      (await call(base, 'POST', `/api/portal/team/invitations/${created.body.id}/resend`, { token: a.accessToken }))
        .status,
    ).toBe(200);
    expect(portal.mailsTo(email)).toHaveLength(2);
    const second = invitationToken(email).token;
    const old = await accept({ token: first, name: 'X', password: 'a long enough password' });
    expect(old.status).toBe(404);
    expect((await accept({ token: second, name: 'X', password: 'a long enough password' })).status).toBe(200);
  });

  it('revoke: the link stops working (410), and the invitation is no longer listed', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const email = newAddress();
    const created = await invite(a.accessToken, email);
    const { token } = invitationToken(email);
    const revoked = await call(base, 'DELETE', `/api/portal/team/invitations/${created.body.id}`, {
      token: a.accessToken,
    });
    expect(revoked.status).toBe(204);
    const res = await accept({ token, name: 'X', password: 'a long enough password' });
    expect(res.status).toBe(410);
    expect(res.body.detail).toContain('revoked');
    const team = await call(base, 'GET', '/api/portal/team', { token: a.accessToken });
    expect(team.body.invitations.map((i: { id: string }) => i.id)).not.toContain(created.body.id);
    // re-inviting a revoked invitation is refused; inviting the address again works
    expect(
      (await call(base, 'POST', `/api/portal/team/invitations/${created.body.id}/resend`, { token: a.accessToken }))
        .status,
    ).toBe(409);
    expect((await invite(a.accessToken, email)).status).toBe(201);
  });

  it('an address with an account accepts with its own password; its password and name stay', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const b = await adminOfNewWorkspace(base, portal.pool);
    // b's admin is invited into a's workspace
    await invite(a.accessToken, b.admin.email);
    const { token } = invitationToken(b.admin.email);
    const wrong = await accept({ token, name: 'Mallory', password: 'not their password' });
    expect(wrong.status).toBe(401);
    const ok = await accept({ token, name: 'Mallory', password: b.admin.password });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      accountCreated: false,
      user: { id: b.admin.id, name: 'Test User' },
      workspace: { slug: a.workspace.slug, role: 'member' },
    });
    expect(await login(base, b.admin)).toBeTruthy();
  });

  it("a link's state, asked without using it: open, then accepted (a new link mails a password link), or revoked and expired (an admin invites again)", async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const [accepted, revoked, expired] = [newAddress(), newAddress(), newAddress()];
    const ids: Record<string, string> = {};
    for (const email of [accepted, revoked, expired]) ids[email] = (await invite(a.accessToken, email)).body.id;
    const tokenOf = (email: string) => invitationToken(email).token;

    expect((await check(tokenOf(accepted))).body).toEqual({
      purpose: 'team',
      state: 'open',
      message: 'This invitation is open: join the workspace.',
      renewable: false,
    });
    // checking used nothing: the link is accepted afterwards, once
    expect((await accept({ token: tokenOf(accepted), name: 'Ada', password: 'a long enough password' })).status).toBe(
      200,
    );
    expect((await check(tokenOf(accepted))).body).toEqual({
      purpose: 'team',
      state: 'used',
      message: 'This invitation was accepted already; log in instead.',
      renewable: true,
    });

    await call(base, 'DELETE', `/api/portal/team/invitations/${ids[revoked]}`, { token: a.accessToken });
    expect((await check(tokenOf(revoked))).body).toEqual({
      purpose: 'team',
      state: 'revoked',
      message: 'This invitation was revoked; ask an admin of the workspace for a new one.',
      renewable: false,
    });
    await portal.pool.query(`UPDATE workspace_invitations SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      ids[expired],
    ]);
    expect((await check(tokenOf(expired))).body).toMatchObject({ state: 'expired', renewable: false });
    // the acceptance's problem says the same as the check
    expect(
      (await accept({ token: tokenOf(expired), name: 'Late', password: 'a long enough password' })).body.detail,
    ).toBe((await check(tokenOf(expired))).body.message);
  });

  it('refuses bad input with 400 and creates nothing', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    expect((await invite(a.accessToken, 'not-an-email')).status).toBe(400);
    expect(
      (
        await call(base, 'POST', '/api/portal/team/invite', {
          token: a.accessToken,
          body: { email: newAddress(), role: 'owner' },
        })
      ).status,
    ).toBe(400);
    expect((await invite(a.accessToken, a.admin.email)).status).toBe(409);

    const email = newAddress();
    await invite(a.accessToken, email);
    const { token } = invitationToken(email);
    const short = await accept({ token, name: 'Shorty', password: 'short' });
    expect(short.status).toBe(400);
    const noName = await accept({ token, password: 'a long enough password' });
    expect(noName.status).toBe(400);
    expect((await portal.pool.query('SELECT 1 FROM users WHERE email = $1', [email])).rowCount).toBe(0);
    // still acceptable after the refusals
    expect((await accept({ token, name: 'Fine', password: 'a long enough password' })).status).toBe(200);
    expect((await accept({ token: 'x'.repeat(43), name: 'X', password: 'a long enough password' })).status).toBe(404);
  });

  it('keeps nothing when the invitation e-mail cannot be sent (notifications service down)', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const email = newAddress();
    await portal.stopNotifications();
    try {
      const res = await invite(a.accessToken, email);
      expect(res.status).toBe(503);
      expect(res.body.detail).toContain('notifications service');
    } finally {
      await portal.startNotifications();
    }
    expect((await portal.pool.query('SELECT 1 FROM workspace_invitations WHERE email = $1', [email])).rowCount).toBe(0);
    expect((await invite(a.accessToken, email)).status).toBe(201);
  });
});

describe('who may manage the team', () => {
  it('a member sees the team but cannot invite, re-invite or revoke (403)', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const member = await login(base, await addUser(portal.pool, [{ workspaceId: a.workspace.id, role: 'member' }]));
    const created = await invite(a.accessToken, newAddress());
    expect((await call(base, 'GET', '/api/portal/team', { token: member })).status).toBe(200);
    expect((await invite(member, newAddress())).status).toBe(403);
    expect(
      (await call(base, 'POST', `/api/portal/team/invitations/${created.body.id}/resend`, { token: member })).status,
    ).toBe(403);
    expect(
      (await call(base, 'DELETE', `/api/portal/team/invitations/${created.body.id}`, { token: member })).status,
    ).toBe(403);
  });

  it("another workspace's admin can neither see nor touch the team (403), nor reach its invitations through their own (404)", async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const b = await adminOfNewWorkspace(base, portal.pool);
    const created = await invite(a.accessToken, newAddress());
    const asB = { token: b.accessToken, headers: { 'x-workspace': a.workspace.slug } };
    expect((await call(base, 'GET', '/api/portal/team', asB)).status).toBe(403);
    expect(
      (await call(base, 'POST', '/api/portal/team/invite', { ...asB, body: { email: newAddress() } })).status,
    ).toBe(403);
    expect(
      (await call(base, 'DELETE', `/api/portal/team/invitations/${created.body.id}`, { token: b.accessToken })).status,
    ).toBe(404);
    expect(
      (await call(base, 'POST', `/api/portal/team/invitations/${created.body.id}/resend`, { token: b.accessToken }))
        .status,
    ).toBe(404);
  });

  it('no session → 401; a workspace key → 403, even with scope *', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const key = (await createKey(base, a.accessToken, { name: 'all', scopes: ['*'] })).token;
    expect((await call(base, 'GET', '/api/portal/team')).status).toBe(401);
    expect((await call(base, 'POST', '/api/portal/team/invite', { body: { email: newAddress() } })).status).toBe(401);
    expect((await call(base, 'GET', '/api/portal/team', { token: key })).status).toBe(403);
    expect((await invite(key, newAddress())).status).toBe(403);
  });

  it('the link carries its token in the fragment, which no HTTP request sends (log secrecy: portal-log-secrecy.test.ts)', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const email = newAddress();
    await invite(a.accessToken, email);
    const { link } = invitationToken(email);
    expect(new URL(link).search).toBe('');
  });
});

describe('invitation e-mails per workspace and hour', () => {
  it('are limited (INVITATIONS_PER_HOUR, re-invites included): beyond it 429 with Retry-After, and no mail; other workspaces are not affected', async () => {
    const limited = await startPortal({ INVITATIONS_PER_HOUR: '2' });
    try {
      const a = await adminOfNewWorkspace(limited.base, limited.pool);
      const b = await adminOfNewWorkspace(limited.base, limited.pool);
      const first = await call(limited.base, 'POST', '/api/portal/team/invite', {
        token: a.accessToken,
        body: { email: newAddress() },
      });
      expect(first.status).toBe(201);
      expect(
        (
          await call(limited.base, 'POST', `/api/portal/team/invitations/${first.body.id}/resend`, {
            token: a.accessToken,
          })
        ).status,
      ).toBe(200);
      const third = newAddress();
      const refused = await call(limited.base, 'POST', '/api/portal/team/invite', {
        token: a.accessToken,
        body: { email: third },
      });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(limited.mailsTo(third)).toHaveLength(0);
      expect(
        (
          await call(limited.base, 'POST', '/api/portal/team/invite', {
            token: b.accessToken,
            body: { email: newAddress() },
          })
        ).status,
      ).toBe(201);
    } finally {
      await limited.close();
    }
  });
});

describe('changing roles and removing members', () => {
  const patch = (token: string, userId: string, role: unknown, headers: Record<string, string> = {}) =>
    call(base, 'PATCH', `/api/portal/team/${userId}`, { token, body: { role }, headers });
  const remove = (token: string, userId: string, headers: Record<string, string> = {}) =>
    call(base, 'DELETE', `/api/portal/team/${userId}`, { token, headers });
  /** A login's access token and its refresh cookie. */
  async function session(user: { email: string; password: string }) {
    const res = await call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    expect(res.status).toBe(200);
    return { accessToken: res.body.accessToken as string, cookie: res.cookies.map((c) => c.split(';')[0]).join('; ') };
  }

  it('an admin promotes a member and demotes them again; the role counts from their next request', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const user = await addUser(portal.pool, [{ workspaceId: a.workspace.id, role: 'member' }]);
    const member = await login(base, user);
    expect((await invite(member, newAddress())).status).toBe(403);

    const promoted = await patch(a.accessToken, user.id, 'admin');
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ id: user.id, email: user.email, role: 'admin' });
    expect((await invite(member, newAddress())).status).toBe(201); // the same access token, now an admin's
    expect((await patch(a.accessToken, user.id, 'admin')).body).toMatchObject({ role: 'admin' }); // unchanged, still 200

    expect((await patch(a.accessToken, user.id, 'member')).body).toMatchObject({ role: 'member' });
    expect((await invite(member, newAddress())).status).toBe(403);
    const team = await call(base, 'GET', '/api/portal/team', { token: a.accessToken });
    expect(team.body.members.find((m: { id: string }) => m.id === user.id)).toMatchObject({ role: 'member' });
  });

  it('the last admin can be neither demoted nor removed (409 problem), not even by themself; with a second admin they can', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const refusals = [
      { res: await patch(a.accessToken, a.admin.id, 'member'), what: 'demoted' },
      { res: await remove(a.accessToken, a.admin.id), what: 'removed' },
    ];
    for (const { res, what } of refusals) {
      expect(res.status).toBe(409);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.detail).toBe(
        `The last admin of workspace "${a.workspace.slug}" cannot be ${what}: make another member admin first.`,
      );
    }
    expect((await call(base, 'GET', '/api/portal/team', { token: a.accessToken })).body.members).toEqual([
      expect.objectContaining({ id: a.admin.id, role: 'admin' }),
    ]);

    const second = await addUser(portal.pool, [{ workspaceId: a.workspace.id, role: 'admin' }]);
    expect((await patch(a.accessToken, a.admin.id, 'member')).status).toBe(200); // stepping down: another admin is left
    const secondToken = await login(base, second);
    expect((await patch(secondToken, second.id, 'member')).status).toBe(409);
    expect((await remove(secondToken, second.id)).status).toBe(409);
  });

  it('two admins removing each other at once: one wins, the workspace keeps an admin', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const other = await addUser(portal.pool, [{ workspaceId: a.workspace.id, role: 'admin' }]);
    const otherToken = await login(base, other);
    const results = await Promise.all([remove(a.accessToken, other.id), remove(otherToken, a.admin.id)]);
    // the loser is refused as the last admin (409); or, when the winner was quicker, its session has
    // ended (401), or its session was still good but it is no longer a member of the workspace (403:
    // the removal committed between its authentication and the admin check; a CI run saw it)
    const [won, lost] = results[0]!.status === 204 ? results : [results[1]!, results[0]!];
    expect(won!.status).toBe(204);
    expect([401, 403, 409]).toContain(lost!.status);
    const { rows } = await portal.pool.query(
      `SELECT count(*)::int AS n FROM memberships WHERE workspace_id = $1 AND role = 'admin'`,
      [a.workspace.id],
    );
    expect(rows[0].n).toBe(1);
  });

  it("a removed member's sessions end at once: access token and refresh cookie refused; other workspaces stay theirs after a new login", async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const elsewhere = await adminOfNewWorkspace(base, portal.pool);
    const user = await addUser(portal.pool, [
      { workspaceId: a.workspace.id, role: 'member' },
      { workspaceId: elsewhere.workspace.id, role: 'member' },
    ]);
    const s1 = await session(user);
    const s2 = await session(user);
    const inA = { 'x-workspace': a.workspace.slug };
    expect((await call(base, 'GET', '/api/portal/team', { token: s1.accessToken, headers: inA })).status).toBe(200);

    expect((await remove(a.accessToken, user.id)).status).toBe(204);
    for (const s of [s1, s2]) {
      expect((await call(base, 'GET', '/api/auth/me', { token: s.accessToken })).status).toBe(401);
      expect((await call(base, 'GET', '/api/portal/team', { token: s.accessToken, headers: inA })).status).toBe(401);
      expect((await call(base, 'POST', '/api/auth/refresh', { cookie: s.cookie })).status).toBe(401);
    }
    const team = await call(base, 'GET', '/api/portal/team', { token: a.accessToken });
    expect(team.body.members.map((m: { id: string }) => m.id)).not.toContain(user.id);
    // signing in again: the other workspace is still theirs, this one is not
    const again = await login(base, user);
    expect(
      (
        await call(base, 'GET', '/api/portal/team', {
          token: again,
          headers: { 'x-workspace': elsewhere.workspace.slug },
        })
      ).status,
    ).toBe(200);
    expect((await call(base, 'GET', '/api/portal/team', { token: again, headers: inA })).status).toBe(403);
    // removing them again: not a member (404)
    expect((await remove(a.accessToken, user.id)).status).toBe(404);
  });

  it('members, other workspaces, keys and anonymous callers cannot; bad input is a 400 and changes nothing', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const b = await adminOfNewWorkspace(base, portal.pool);
    const user = await addUser(portal.pool, [{ workspaceId: a.workspace.id, role: 'member' }]);
    const member = await login(base, user);
    const key = (await createKey(base, a.accessToken, { name: 'all', scopes: ['*'] })).token;

    expect((await patch(member, a.admin.id, 'member')).status).toBe(403);
    expect((await remove(member, a.admin.id)).status).toBe(403);
    expect((await patch(key, user.id, 'admin')).status).toBe(403);
    expect((await remove(key, user.id)).status).toBe(403);
    expect((await call(base, 'DELETE', `/api/portal/team/${user.id}`)).status).toBe(401);
    // another workspace's admin: not through A (403), and A's member is unknown in B (404)
    expect((await remove(b.accessToken, user.id, { 'x-workspace': a.workspace.slug })).status).toBe(403);
    expect((await remove(b.accessToken, user.id)).status).toBe(404);
    expect((await patch(b.accessToken, user.id, 'admin')).status).toBe(404);

    expect((await patch(a.accessToken, user.id, 'owner')).status).toBe(400);
    expect(
      (
        await call(base, 'PATCH', `/api/portal/team/${user.id}`, {
          token: a.accessToken,
          body: { role: 'admin', extra: 1 },
        })
      ).status,
    ).toBe(400);
    expect((await patch(a.accessToken, 'not-a-uuid', 'admin')).status).toBe(400);
    expect((await patch(a.accessToken, randomUUID(), 'admin')).status).toBe(404);
    const { rows } = await portal.pool.query(
      'SELECT user_id, role FROM memberships WHERE workspace_id = $1 ORDER BY role',
      [a.workspace.id],
    );
    expect(rows).toEqual([
      { user_id: a.admin.id, role: 'admin' },
      { user_id: user.id, role: 'member' },
    ]);
  });
});
