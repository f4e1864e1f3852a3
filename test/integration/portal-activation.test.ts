/**
 * One identity, over real HTTP: the account API, the notifications service and the SMTP sink on
 * the run's real PostgreSQL and Redis. The owner's welcome e-mail (the notifications service's
 * POST /v1/welcome, as the welcome workflow calls it) carries a single-use activation link; a
 * forgotten password gets a single-use link by e-mail. Links are read from the mails the sink
 * caught, as their owner would, and tried used twice, expired, replaced and tampered with.
 */
import { request } from 'node:http';
import { randomInt, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, addWorkspace, call, login } from '../support/workspace-api.js';
import { linkIn, startPortal, type Portal } from '../support/portal.js';
import { testKeys } from '../support/service-keys.js';

let portal: Portal;
let base: string;

beforeAll(async () => {
  portal = await startPortal({ PASSWORD_LINKS_PER_ADDRESS_PER_HOUR: '3', PASSWORD_LINKS_PER_CLIENT_PER_HOUR: '4' });
  base = portal.base;
});
afterAll(() => portal?.close());

const newAddress = () => `owner-${randomUUID().slice(0, 8)}@example.test`;
const PASSWORD = 'correct horse battery';

/** A workspace whose owner has an account without a password, as provisioning leaves it. */
async function newOwner() {
  const workspace = await addWorkspace(portal.pool);
  const email = newAddress();
  const { rows } = await portal.pool.query<{ id: string }>(
    `INSERT INTO users (email, name) VALUES ($1, 'Ada Owner') RETURNING id`,
    [email],
  );
  await portal.pool.query(`INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, 'admin')`, [
    rows[0]!.id,
    workspace.id,
  ]);
  return { workspace, email, userId: rows[0]!.id };
}

/** POST /v1/welcome on the notifications service, as the welcome workflow sends it (its id is the idempotency key). */
async function welcome(email: string, workspace: string, idempotencyKey = `welcome:${workspace}:${randomUUID()}`) {
  const res = await fetch(new URL('/v1/welcome', portal.cfg.NOTIFICATIONS_URL), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': testKeys.notifications,
      'idempotency-key': idempotencyKey,
    },
    body: JSON.stringify({ email, workspace }),
  });
  expect(res.status).toBe(200);
  return res.json() as Promise<{ status: string }>;
}

const activationIn = (email: string, nth = -1) => linkIn(portal.mailsTo(email).at(nth), `${base}/w/`);
const resetLinkIn = (email: string, nth = -1) => linkIn(portal.mailsTo(email).at(nth), `${base}/account/`);
const activate = (token: string, password = PASSWORD) =>
  call(base, 'POST', '/api/portal/team/invitations/accept', { body: { token, password } });
// from a client address of its own each: the per-client limit (4 an hour here) is the last test's
const check = (token: string) => call(base, 'POST', '/api/portal/team/invitations/check', { body: { token } });
const renew = (token: string) => postFrom(someLoopback(), '/api/portal/team/invitations/renew', { token });
const tampered = (token: string) => token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');

/** The mail count of `email` reaching `n` (the sink writes each mail as it arrives). */
async function mailsArrive(email: string, n: number) {
  await expect.poll(() => portal.mailsTo(email).length, { timeout: 15_000 }).toBe(n);
}

/**
 * `n` reset links of `email` mailed and stored: the mail is sent inside the transaction that stores
 * its link (so a link that could not be mailed is not kept), so it can arrive a moment before the commit.
 */
async function resetLinksArrive(email: string, userId: string, n: number) {
  await mailsArrive(email, n);
  const stored = async () =>
    (await portal.pool.query('SELECT 1 FROM password_resets WHERE user_id = $1', [userId])).rowCount;
  await expect.poll(stored, { timeout: 5_000 }).toBe(n);
}

/** A POST to the API from a loopback address of its own (so the per-client limit of one test is its own). */
function postFrom(localAddress: string, path: string, body: unknown) {
  const url = new URL(path, base);
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }>(
    (resolve, reject) => {
      const req = request(
        url,
        { method: 'POST', localAddress, headers: { 'content-type': 'application/json' } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(body));
    },
  );
}
const someLoopback = () => `127.${randomInt(1, 255)}.${randomInt(1, 255)}.${randomInt(2, 255)}`;

describe('the owner’s activation link in the welcome e-mail', () => {
  it('lets the owner choose a password once and lands them signed in on their workspace', async () => {
    const owner = await newOwner();
    await welcome(owner.email, owner.workspace.slug);
    const [mail] = portal.mailsTo(owner.email);
    expect(mail!.text).toContain(`your workspace "${owner.workspace.slug}" is ready`);
    const { link, token } = activationIn(owner.email);
    expect(link.startsWith(`${base}/w/${owner.workspace.slug}/activate#token=`)).toBe(true);
    // stored hashed only
    const stored = await portal.pool.query(
      `SELECT token_hash, purpose, role FROM workspace_invitations WHERE lower(email) = lower($1)`,
      [owner.email],
    );
    expect(stored.rows).toEqual([
      { token_hash: expect.not.stringContaining(token), purpose: 'activation', role: 'admin' },
    ]);
    // the link opens the portal's page; opening it changes nothing
    const page = await fetch(new URL(`/w/${owner.workspace.slug}/activate`, base), { redirect: 'manual' });
    expect(page.status).toBe(302);
    expect(page.headers.get('location')).toBe(`/app/w/${owner.workspace.slug}/activate`);

    const activated = await activate(token);
    expect(activated.status).toBe(200);
    expect(activated.body).toMatchObject({
      tokenType: 'Bearer',
      user: { email: owner.email, name: 'Ada Owner' },
      accountCreated: false,
      workspace: { slug: owner.workspace.slug, role: 'admin' },
    });
    expect(activated.cookies.some((c) => c.startsWith('plana_refresh='))).toBe(true);
    // signed in, and the password works from now on
    const me = await call(base, 'GET', '/api/auth/me', { token: activated.body.accessToken });
    expect(me.body.workspaces.map((w: { slug: string }) => w.slug)).toEqual([owner.workspace.slug]);
    expect(await login(base, { email: owner.email, password: PASSWORD })).toBeTruthy();
    // the team list shows no "invitation" for the owner
    const team = await call(base, 'GET', '/api/portal/team', {
      token: activated.body.accessToken,
      headers: { 'x-workspace': owner.workspace.slug },
    });
    expect(team.body.invitations).toEqual([]);

    // used twice: 409, in the owner's terms; nothing changes
    const again = await activate(token, 'another password entirely');
    expect(again.status).toBe(409);
    expect(again.headers.get('content-type')).toContain('application/problem+json');
    expect(again.body.detail).toBe('This link was used already: your password is set. Sign in, or ask for a new link.');
    expect(await login(base, { email: owner.email, password: PASSWORD })).toBeTruthy();

    // "send me a new link" from the used link's page: a password link to the owner's address
    const renewed = await renew(token);
    expect(renewed.status).toBe(202);
    await mailsArrive(owner.email, 2);
    expect(resetLinkIn(owner.email).link).toContain(`${base}/account/reset-password#token=`);
  });

  it('a resend issues a new link and kills the old one; a repeat of one sending issues none', async () => {
    const owner = await newOwner();
    const key = `welcome:${owner.workspace.slug}:1`;
    await welcome(owner.email, owner.workspace.slug, key);
    const first = activationIn(owner.email).token;
    // the welcome workflow's retry after a lost answer: the same key, no second mail, no new link
    expect(await welcome(owner.email, owner.workspace.slug, key)).toMatchObject({ status: 'duplicate' });
    expect(portal.mailsTo(owner.email)).toHaveLength(1);

    await welcome(owner.email, owner.workspace.slug, `welcome:${owner.workspace.slug}:2`);
    const second = activationIn(owner.email).token;
    expect(second).not.toBe(first);
    const old = await activate(first);
    expect(old.status).toBe(410);
    expect(old.body.detail).toContain('This link was replaced by a newer one');
    expect((await activate(second)).status).toBe(200);
  });

  it('an expired link says so; "send me a new link" mails a new one that works', async () => {
    const owner = await newOwner();
    await welcome(owner.email, owner.workspace.slug);
    const { token } = activationIn(owner.email);
    await portal.pool.query(
      `UPDATE workspace_invitations SET expires_at = now() - interval '1 second' WHERE lower(email) = lower($1)`,
      [owner.email],
    );
    const expired = await activate(token);
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ status: 410, detail: 'This link has expired: ask for a new one.' });

    const renewed = await renew(token);
    expect(renewed.status).toBe(202);
    await mailsArrive(owner.email, 2);
    const fresh = activationIn(owner.email);
    expect(fresh.link.startsWith(`${base}/w/${owner.workspace.slug}/activate#token=`)).toBe(true);
    expect((await activate(fresh.token)).status).toBe(200);
    expect((await activate(token)).status).toBe(410);
  });

  it('a tampered link is not a link (404), and cannot be renewed', async () => {
    const owner = await newOwner();
    await welcome(owner.email, owner.workspace.slug);
    const { token } = activationIn(owner.email);
    const res = await activate(tampered(token));
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect((await renew(tampered(token))).status).toBe(404);
    // the real link still works
    expect((await activate(token)).status).toBe(200);
  });

  it('tells what a link can still do without using it: open, used, replaced, expired; a tampered one is 404', async () => {
    const owner = await newOwner();
    await welcome(owner.email, owner.workspace.slug);
    const first = activationIn(owner.email).token;
    const open = await check(first);
    expect(open.status).toBe(200);
    expect(open.body).toEqual({
      purpose: 'activation',
      state: 'open',
      message: 'This link works: choose your password.',
      renewable: false,
    });
    // asking again changes nothing: the link is still open
    expect((await check(first)).body.state).toBe('open');

    await welcome(owner.email, owner.workspace.slug);
    const second = activationIn(owner.email).token;
    expect((await check(first)).body).toEqual({
      purpose: 'activation',
      state: 'replaced',
      message: (await activate(first)).body.detail,
      renewable: true,
    });
    expect((await check(first)).body.message).toContain('This link was replaced by a newer one');

    const expired = await newOwner();
    await welcome(expired.email, expired.workspace.slug);
    const late = activationIn(expired.email).token;
    await portal.pool.query(
      `UPDATE workspace_invitations SET expires_at = now() - interval '1 second' WHERE lower(email) = lower($1)`,
      [expired.email],
    );
    expect((await check(late)).body).toMatchObject({
      state: 'expired',
      message: 'This link has expired: ask for a new one.',
      renewable: true,
    });

    expect((await activate(second)).status).toBe(200);
    expect((await check(second)).body).toEqual({
      purpose: 'activation',
      state: 'used',
      message: 'This link was used already: your password is set. Sign in, or ask for a new link.',
      renewable: true,
    });

    const unknown = await check(tampered(second));
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('application/problem+json');
  });

  it('an owner who has a password already gets the welcome without a link', async () => {
    const workspace = await addWorkspace(portal.pool);
    const owner = await addUser(portal.pool, [{ workspaceId: workspace.id, role: 'admin' }]);
    await welcome(owner.email, workspace.slug);
    const [mail] = portal.mailsTo(owner.email);
    expect(mail!.text).toContain(`Sign in at ${base}/w/${workspace.slug}`);
    expect(mail!.text).not.toContain('#token=');
  });
});

describe('forgot your password', () => {
  const forgot = (email: string) => postFrom(someLoopback(), '/api/auth/password/forgot', { email });
  const reset = (token: string, password: string) =>
    call(base, 'POST', '/api/auth/password/reset', { body: { token, password } });

  it('mails a single-use link; the reset signs in and ends every other session', async () => {
    const workspace = await addWorkspace(portal.pool);
    const user = await addUser(portal.pool, [{ workspaceId: workspace.id, role: 'member' }]);
    const credentials = { email: user.email, password: user.password };
    const earlier = await call(base, 'POST', '/api/auth/login', { body: credentials });
    const earlierCookie = earlier.cookies.find((c) => c.startsWith('plana_refresh='))!.split(';')[0]!;

    const asked = await forgot(user.email.toUpperCase());
    expect(asked.status).toBe(202);
    await resetLinksArrive(user.email, user.id, 1);
    const { link, token } = resetLinkIn(user.email);
    expect(link.startsWith(`${base}/account/reset-password#token=`)).toBe(true);
    const stored = await portal.pool.query('SELECT token_hash FROM password_resets WHERE user_id = $1', [user.id]);
    expect(stored.rows[0].token_hash).not.toContain(token);
    const page = await fetch(new URL('/account/reset-password', base), { redirect: 'manual' });
    expect(page.headers.get('location')).toBe('/app/account/reset-password');

    expect((await reset(token, 'short')).status).toBe(400);
    const done = await reset(token, 'a brand new password');
    expect(done.status).toBe(200);
    expect(done.body.user).toMatchObject({ id: user.id, email: user.email });
    // the earlier session is over; the new one works; the new password works, the old does not
    expect((await call(base, 'POST', '/api/auth/refresh', { cookie: earlierCookie })).status).toBe(401);
    expect((await call(base, 'GET', '/api/auth/me', { token: done.body.accessToken })).status).toBe(200);
    expect((await call(base, 'POST', '/api/auth/login', { body: credentials })).status).toBe(401);
    expect(await login(base, { email: user.email, password: 'a brand new password' })).toBeTruthy();

    const twice = await reset(token, 'yet another password');
    expect(twice.status).toBe(409);
    expect(twice.body.detail).toContain('was used already');
    expect((await reset(tampered(token), 'yet another password')).status).toBe(404);
  });

  it('answers an unknown address exactly as a known one, and mails nothing', async () => {
    const workspace = await addWorkspace(portal.pool);
    const user = await addUser(portal.pool, [{ workspaceId: workspace.id, role: 'member' }]);
    const unknown = newAddress();
    const [known, other] = [await forgot(user.email), await forgot(unknown)];
    expect(other.status).toBe(known.status);
    expect(other.body).toEqual(known.body);
    await mailsArrive(user.email, 1);
    // the known address's mail has arrived: the unknown one's would have been sent by now
    await new Promise((r) => setTimeout(r, 500));
    expect(portal.mailsTo(unknown)).toEqual([]);
  });

  it('a newer link replaces the older; an expired link says so', async () => {
    const workspace = await addWorkspace(portal.pool);
    const user = await addUser(portal.pool, [{ workspaceId: workspace.id, role: 'member' }]);
    await forgot(user.email);
    await resetLinksArrive(user.email, user.id, 1);
    const first = resetLinkIn(user.email).token;
    await forgot(user.email);
    await resetLinksArrive(user.email, user.id, 2);
    const second = resetLinkIn(user.email).token;
    const replaced = await reset(first, 'a brand new password');
    expect(replaced.status).toBe(410);
    expect(replaced.body.detail).toContain('replaced by a newer one');
    await portal.pool.query(`UPDATE password_resets SET expires_at = now() WHERE user_id = $1`, [user.id]);
    const expired = await reset(second, 'a brand new password');
    expect(expired.status).toBe(410);
    expect(expired.body.detail).toBe('This password link has expired: ask for a new one.');
  });

  it('limits the links per address (3 an hour here) with 429 and a problem body, the same for an unknown address', async () => {
    for (const email of [newAddress(), newAddress()]) {
      for (let i = 0; i < 3; i++)
        expect((await postFrom(someLoopback(), '/api/auth/password/forgot', { email })).status).toBe(202);
      const refused = await postFrom(someLoopback(), '/api/auth/password/forgot', { email });
      expect(refused.status).toBe(429);
      expect(refused.headers['content-type']).toContain('application/problem+json');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.body).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    }
  });

  it('limits the links per client (4 an hour here), whatever the addresses', async () => {
    const client = someLoopback();
    for (let i = 0; i < 4; i++)
      expect((await postFrom(client, '/api/auth/password/forgot', { email: newAddress() })).status).toBe(202);
    const refused = await postFrom(client, '/api/auth/password/forgot', { email: newAddress() });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    // another client is not held back
    expect((await postFrom(someLoopback(), '/api/auth/password/forgot', { email: newAddress() })).status).toBe(202);
  });
});
