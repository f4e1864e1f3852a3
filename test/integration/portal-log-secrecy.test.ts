/**
 * The account API as a real process logging at trace level, with the notifications service and
 * the SMTP sink: an invitation sent, re-sent and accepted, an e-mail change requested and confirmed,
 * a password changed, a forgotten password reset by its link; then the API's whole log output is searched for every token and password
 * that crossed the wire. None may appear.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { startNotifications } from '../../services/notifications/server.js';
import { startSmtpSink, readMailbox, type SmtpSink } from '../../sandbox/smtp/sink.js';
import { apiProcessEnv, startApiProcess } from '../support/api.js';
import { tempDir, testConfig } from '../support/env.js';
import { linkIn } from '../support/portal.js';
import { addUser, addWorkspace, call, login } from '../support/workspace-api.js';

let cfg: Config;
let pool: Pool;
let sink: SmtpSink;
let notifications: Awaited<ReturnType<typeof startNotifications>>;
let api: Awaited<ReturnType<typeof startApiProcess>>;
let base: string;

beforeAll(async () => {
  cfg = await testConfig();
  pool = createPool(cfg.DATABASE_URL, 2);
  base = cfg.API_PUBLIC_URL;
  sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: tempDir('mail') });
  notifications = await startNotifications(cfg);
  api = await startApiProcess(
    apiProcessEnv(cfg, { LOG_LEVEL: 'trace', NOTIFICATIONS_URL: cfg.NOTIFICATIONS_URL }),
    base,
  );
});

afterAll(async () => {
  await api?.stop();
  await notifications?.close();
  await sink?.close();
  await pool?.end();
});

const mailsTo = (address: string) => readMailbox(sink.dir).filter((m) => m.to.includes(address));

describe('logs of the portal', () => {
  it('hold no invitation token, confirmation token or password', async () => {
    const ws = await addWorkspace(pool);
    const admin = await addUser(pool, [{ workspaceId: ws.id, role: 'admin' }]);
    const accessToken = await login(base, admin);
    const secrets: string[] = [admin.password];

    const invitee = `log-${randomUUID().slice(0, 8)}@example.test`;
    const invited = await call(base, 'POST', '/api/portal/team/invite', {
      token: accessToken,
      body: { email: invitee },
    });
    expect(invited.status).toBe(201);
    secrets.push(linkIn(mailsTo(invitee)[0], `${base}/w/`).token);
    expect(
      (await call(base, 'POST', `/api/portal/team/invitations/${invited.body.id}/resend`, { token: accessToken }))
        .status,
    ).toBe(200);
    const token = linkIn(mailsTo(invitee)[1], `${base}/w/`).token;
    secrets.push(token, 'the invitee password');
    expect(
      (
        await call(base, 'POST', '/api/portal/team/invitations/accept', {
          body: { token, name: 'Invitee', password: 'the invitee password' },
        })
      ).status,
    ).toBe(200);

    const moved = `moved-${randomUUID().slice(0, 8)}@example.test`;
    expect(
      (
        await call(base, 'PUT', '/api/portal/profile', {
          token: accessToken,
          body: { email: moved, currentPassword: admin.password },
        })
      ).status,
    ).toBe(202);
    const confirm = linkIn(mailsTo(moved)[0], `${base}/account/confirm-email`).token;
    secrets.push(confirm);
    expect((await call(base, 'POST', '/api/portal/profile/email/confirm', { body: { token: confirm } })).status).toBe(
      200,
    );
    secrets.push('a new password for the log test');
    expect(
      (
        await call(base, 'PUT', '/api/portal/profile', {
          token: accessToken,
          body: { currentPassword: admin.password, newPassword: 'a new password for the log test' },
        })
      ).status,
    ).toBe(200);

    // a forgotten password: the link's token, used twice, and the new password
    expect((await call(base, 'POST', '/api/auth/password/forgot', { body: { email: moved } })).status).toBe(202);
    await expect.poll(() => mailsTo(moved).length, { timeout: 15_000 }).toBe(2);
    // the mail is sent inside the transaction that stores its link: it can arrive a moment before the commit
    const stored = async () =>
      (
        await pool.query(
          'SELECT 1 FROM password_resets r JOIN users u ON u.id = r.user_id WHERE lower(u.email) = lower($1)',
          [moved],
        )
      ).rowCount;
    await expect.poll(stored, { timeout: 5_000 }).toBe(1);
    const reset = linkIn(mailsTo(moved)[1], `${base}/account/reset-password`).token;
    secrets.push(reset, 'a password chosen by a link');
    for (const expected of [200, 409])
      expect(
        (
          await call(base, 'POST', '/api/auth/password/reset', {
            body: { token: reset, password: 'a password chosen by a link' },
          })
        ).status,
      ).toBe(expected);

    const out = api.output();
    expect(out).toContain('password reset');
    expect(out).toContain('invitation accepted');
    expect(out).toContain('e-mail address changed');
    for (const secret of secrets) expect(out).not.toContain(secret);
  });
});
