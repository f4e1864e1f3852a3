/**
 * The profile over real HTTP with real mail: the name, an e-mail change that takes effect only when
 * confirmed from the new address, and a password change that ends the person's other sessions.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, addWorkspace, call, createKey, login, adminOfNewWorkspace } from '../support/workspace-api.js';
import { linkIn, startPortal, type Portal } from '../support/portal.js';

let portal: Portal;
let base: string;

beforeAll(async () => {
  portal = await startPortal();
  base = portal.base;
});
afterAll(() => portal?.close());

async function person() {
  const ws = await addWorkspace(portal.pool);
  const user = await addUser(portal.pool, [{ workspaceId: ws.id, role: 'member' }]);
  return { ws, user, token: await login(base, user) };
}

const loginFull = (user: { email: string; password: string }) =>
  call(base, 'POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
const refreshCookie = (cookies: string[]) => cookies.find((c) => c.startsWith('plana_refresh='))!.split(';')[0]!;
const newAddress = () => `moved-${randomUUID().slice(0, 8)}@example.test`;

/** The answer to an e-mail change request (taken address or not). */
const SENT = 'We sent a confirmation link to the new address; the change takes effect once it is confirmed from there.';

describe('GET/PUT /api/portal/profile', () => {
  it('shows the profile and changes the name at once', async () => {
    const { ws, user, token } = await person();
    const got = await call(base, 'GET', '/api/portal/profile', { token });
    expect(got.status).toBe(200);
    expect(got.body).toEqual({
      id: user.id,
      email: user.email,
      name: 'Test User',
      hasPassword: true,
      pendingEmail: null,
      workspaces: [{ id: ws.id, slug: ws.slug, name: `Workspace ${ws.slug}`, role: 'member' }],
    });
    const put = await call(base, 'PUT', '/api/portal/profile', { token, body: { name: 'Barbara Liskov' } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      name: 'Barbara Liskov',
      emailConfirmationSent: false,
      passwordChanged: false,
      otherSessionsEnded: 0,
    });
    expect((await call(base, 'GET', '/api/auth/me', { token })).body.user.name).toBe('Barbara Liskov');
  });

  it('changes the e-mail address only once confirmed through the link mailed to the new address', async () => {
    const { user, token } = await person();
    const to = newAddress();
    const put = await call(base, 'PUT', '/api/portal/profile', {
      token,
      body: { email: to, currentPassword: user.password },
    });
    expect(put.status).toBe(202);
    expect(put.body).toMatchObject({
      email: user.email,
      emailConfirmationSent: true,
      pendingEmail: { email: to },
      message: SENT,
    });
    // the old address is told; the new one gets the link; the login still uses the old address
    expect(portal.mailsTo(user.email)[0]!.text).toContain(to);
    expect(portal.mailsTo(user.email)[0]!.text).not.toContain('#token=');
    const { link, token: confirmToken } = linkIn(portal.mailsTo(to)[0], `${base}/account/confirm-email`);
    expect(link).toContain('#token=');
    expect((await loginFull(user)).status).toBe(200);
    // opening the page changes nothing
    const page = await fetch(new URL('/account/confirm-email', base), { redirect: 'manual' });
    expect([page.status, page.headers.get('location')]).toEqual([302, '/app/account/confirm-email']);
    expect((await call(base, 'GET', '/api/portal/profile', { token })).body.email).toBe(user.email);

    const confirmed = await call(base, 'POST', '/api/portal/profile/email/confirm', { body: { token: confirmToken } });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toEqual({ email: to });
    const after = await call(base, 'GET', '/api/portal/profile', { token });
    expect(after.body).toMatchObject({ email: to, pendingEmail: null });
    expect((await loginFull({ email: to, password: user.password })).status).toBe(200);
    expect((await loginFull(user)).status).toBe(401);
    // single use
    const again = await call(base, 'POST', '/api/portal/profile/email/confirm', { body: { token: confirmToken } });
    expect(again.status).toBe(409);
  });

  it('an expired confirmation link is refused with 410; a newer request kills the older link (404)', async () => {
    const { user, token } = await person();
    const first = newAddress();
    await call(base, 'PUT', '/api/portal/profile', { token, body: { email: first, currentPassword: user.password } });
    const firstToken = linkIn(portal.mailsTo(first)[0], `${base}/account/confirm-email`).token;
    const second = newAddress();
    await call(base, 'PUT', '/api/portal/profile', { token, body: { email: second, currentPassword: user.password } });
    const secondToken = linkIn(portal.mailsTo(second)[0], `${base}/account/confirm-email`).token;
    expect(
      (await call(base, 'POST', '/api/portal/profile/email/confirm', { body: { token: firstToken } })).status,
    ).toBe(404);

    await portal.pool.query(
      `UPDATE email_changes SET expires_at = now() - interval '1 second' WHERE user_id = $1 AND cancelled_at IS NULL`,
      [user.id],
    );
    const late = await call(base, 'POST', '/api/portal/profile/email/confirm', { body: { token: secondToken } });
    expect(late.status).toBe(410);
    expect((await call(base, 'GET', '/api/portal/profile', { token })).body).toMatchObject({
      email: user.email,
      pendingEmail: null,
    });
  });

  it('refuses an e-mail change without or with a wrong current password, or to the same address', async () => {
    const { user, token } = await person();
    const to = newAddress();
    expect((await call(base, 'PUT', '/api/portal/profile', { token, body: { email: to } })).status).toBe(400);
    expect(
      (
        await call(base, 'PUT', '/api/portal/profile', {
          token,
          body: { email: to, currentPassword: 'wrong password' },
        })
      ).status,
    ).toBe(403);
    expect(
      (
        await call(base, 'PUT', '/api/portal/profile', {
          token,
          body: { email: user.email, currentPassword: user.password },
        })
      ).status,
    ).toBe(400);
    expect(portal.mailsTo(to)).toHaveLength(0);
  });

  it('answers a request for an address another account uses exactly as for a free one; that address is told of the attempt, gets no link, and never changes hands', async () => {
    const { user, token } = await person();
    const other = await person();
    const free = newAddress();
    const taken = other.user.email.toUpperCase();
    /** the answer but for the address asked for */
    const answer = (res: Awaited<ReturnType<typeof call>>) => ({
      status: res.status,
      body: { ...res.body, pendingEmail: undefined },
    });
    const toFree = await call(base, 'PUT', '/api/portal/profile', {
      token,
      body: { email: free, currentPassword: user.password },
    });
    const toTaken = await call(base, 'PUT', '/api/portal/profile', {
      token,
      body: { email: taken, currentPassword: user.password },
    });
    // the same answer, and the same pending state in the profile
    expect(answer(toTaken)).toEqual(answer(toFree));
    expect([toFree.body.pendingEmail.email, toTaken.body.pendingEmail.email]).toEqual([free, taken]);
    expect(toTaken.status).toBe(202);
    expect(toTaken.body.message).toBe(SENT);
    expect((await call(base, 'GET', '/api/portal/profile', { token })).body.pendingEmail).toMatchObject({
      email: taken,
    });

    // the owner of the taken address learns of the attempt, with nothing to confirm
    await expect.poll(() => portal.mailsTo(other.user.email).length).toBe(1);
    const notice = portal.mailsTo(other.user.email)[0]!;
    expect(notice.subject).toBe('Someone tried to use your e-mail address on Plana');
    expect(notice.text).not.toContain('#token=');
    expect(notice.text).not.toContain(user.email);
    // the requester's own address is told of the request as for any change
    expect(portal.mailsTo(user.email).at(-1)!.text).toContain(taken);
    // and nothing moves: both people still sign in with their own address
    expect((await call(base, 'GET', '/api/portal/profile', { token })).body.email).toBe(user.email);
    expect((await loginFull(user)).status).toBe(200);
    expect((await loginFull(other.user)).status).toBe(200);
  });

  it('a password change needs the current password and ends every other session of the person, not this one', async () => {
    const { user, token } = await person();
    const other = await loginFull(user);
    const otherAccess = other.body.accessToken as string;
    const otherCookie = refreshCookie(other.cookies);
    const bystander = await person();

    const wrong = await call(base, 'PUT', '/api/portal/profile', {
      token,
      body: { currentPassword: 'not it', newPassword: 'a brand new password' },
    });
    expect(wrong.status).toBe(403);
    expect((await call(base, 'GET', '/api/auth/me', { token: otherAccess })).status).toBe(200);

    const changed = await call(base, 'PUT', '/api/portal/profile', {
      token,
      body: { currentPassword: user.password, newPassword: 'a brand new password' },
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ passwordChanged: true, otherSessionsEnded: 1 });

    // the other session's access token and refresh token are dead at once; this one lives
    expect((await call(base, 'GET', '/api/auth/me', { token: otherAccess })).status).toBe(401);
    expect((await call(base, 'POST', '/api/auth/refresh', { cookie: otherCookie })).status).toBe(401);
    expect((await call(base, 'GET', '/api/auth/me', { token })).status).toBe(200);
    expect((await call(base, 'GET', '/api/auth/me', { token: bystander.token })).status).toBe(200);
    // the old password no longer logs in; the new one does
    expect((await loginFull(user)).status).toBe(401);
    expect((await loginFull({ email: user.email, password: 'a brand new password' })).status).toBe(200);
  });

  it('refuses a too short new password with 400 and changes nothing', async () => {
    const { user, token } = await person();
    const res = await call(base, 'PUT', '/api/portal/profile', {
      token,
      body: { currentPassword: user.password, newPassword: 'short', name: 'Changed' },
    });
    expect(res.status).toBe(400);
    expect((await call(base, 'GET', '/api/portal/profile', { token })).body.name).toBe('Test User');
    expect((await loginFull(user)).status).toBe(200);
  });

  it('throttles guessing the current password: 429 after 10 wrong ones, even for the right one', async () => {
    const { user, token } = await person();
    for (let i = 0; i < 10; i++) {
      expect(
        (
          await call(base, 'PUT', '/api/portal/profile', {
            token,
            body: { currentPassword: `guess-${i}`, newPassword: 'a brand new password' },
          })
        ).status,
      ).toBe(403);
    }
    const blocked = await call(base, 'PUT', '/api/portal/profile', {
      token,
      body: { currentPassword: user.password, newPassword: 'a brand new password' },
    });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it.each([
    ['an empty body', {}],
    ['an unknown field', { role: 'admin' }],
    ['a blank name', { name: '' }],
    ['an invalid e-mail', { email: 'nope', currentPassword: 'x' }],
  ])('refuses %s with 400', async (_label, body) => {
    const { token } = await person();
    const res = await call(base, 'PUT', '/api/portal/profile', { token, body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  it('no session → 401; a workspace key → 403; a confirmation token that is not one → 404', async () => {
    const a = await adminOfNewWorkspace(base, portal.pool);
    const key = (await createKey(base, a.accessToken, { name: 'all', scopes: ['*'] })).token;
    expect((await call(base, 'GET', '/api/portal/profile')).status).toBe(401);
    expect((await call(base, 'PUT', '/api/portal/profile', { body: { name: 'x' } })).status).toBe(401);
    expect((await call(base, 'GET', '/api/portal/profile', { token: key })).status).toBe(403);
    expect((await call(base, 'PUT', '/api/portal/profile', { token: key, body: { name: 'x' } })).status).toBe(403);
    expect(
      (await call(base, 'POST', '/api/portal/profile/email/confirm', { body: { token: 'y'.repeat(43) } })).status,
    ).toBe(404);
  });
});
