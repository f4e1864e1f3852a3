/**
 * The portal's webhook, team and subscription pages end to end in Chromium (Debian's, driven by
 * playwright-core) on the real platform: the account API serving web/dist, the events service,
 * the webhook dispatcher and a Temporal worker (retries and replays), the notifications service
 * with its SMTP sink (the invitation e-mail), an HTTP receiver on loopback, and Stripe's signed
 * events from the sandbox sender (the seeded subscription and invoice).
 *
 * Screenshots go to a temporary folder, or to docs/screenshots/ with PORTAL_SCREENSHOTS=1.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { event, invoice, sandboxIds, sendEvent, subscription } from '../../sandbox/stripe/sender.js';
import { welcomeEmail } from '../../services/notifications/welcome-email.js';
import { launchChromium } from '../support/chromium.js';
import { cellsOffScreen, linkIn, screenshotsDir } from '../support/portal.js';
import { startReceiver, startWebhookPlatform, type Receiver, type WebhookPlatform } from '../support/webhooks.js';
import { addUser, addWorkspace, call, login, uniqueSlug } from '../support/workspace-api.js';

const shots = screenshotsDir();

let p: WebhookPlatform;
let base: string;
let receiver: Receiver;
/** what the receiver answers: 204, or 500 while it is "down" */
let receiverDown = false;
let workspace: { id: string; slug: string };
let owner: { email: string; password: string };
let browser: Browser;
let adminContext: BrowserContext;
let page: Page;

const open = async (target: Page, section: string, heading: string) => {
  await target.goto(`${base}/app/w/${workspace.slug}/${section}`);
  await target.getByRole('heading', { name: heading, exact: true }).waitFor();
};

async function signIn(target: Page, who: { email: string; password: string }) {
  await target.goto(`${base}/app/`);
  await target.getByLabel('E-mail').fill(who.email);
  await target.getByLabel('Password').fill(who.password);
  await target.getByRole('button', { name: 'Sign in' }).click();
  await target.getByRole('heading', { name: 'Dashboard' }).waitFor();
}

beforeAll(async () => {
  p = await startWebhookPlatform({ WEBHOOK_RETRY_SCHEDULE: '200ms,400ms' });
  base = p.base;
  receiver = await startReceiver(() =>
    receiverDown ? { status: 500, body: 'receiver down for maintenance' } : { status: 204 },
  );
  workspace = await addWorkspace(p.pool);
  owner = await addUser(p.pool, [{ workspaceId: workspace.id, role: 'admin' }]);
  browser = await launchChromium();
  adminContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await adminContext.newPage();
  await signIn(page, owner);
});

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await p?.close();
});

describe('webhooks page', () => {
  let messageId: string;

  it('registers an endpoint to a local receiver, shows its secret once, and a test event with its attempt', async () => {
    await open(page, 'webhooks', 'Webhooks');
    await page.getByText('No webhook endpoints yet.').waitFor();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('URL').fill(receiver.url);
    await dialog.getByLabel('Description').fill('ERP bridge');
    await dialog.getByLabel(/Event types/).fill('invoice.posted');
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = await dialog.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('heading', { name: /^Endpoint/ }).waitFor();
    expect(await page.getByText('Enabled', { exact: true }).count()).toBe(1);
    // the secret is hidden until revealed, and the same one comes back
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('button', { name: 'Reveal secret' }).click();
    expect(await page.getByRole('textbox', { name: 'Signing secret' }).inputValue()).toBe(secret);
    // rotating: a new secret, and the page says the old one still signs for a while
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByText(/The previous secret still signs as well until/).waitFor();
    expect(await page.getByRole('textbox', { name: 'Signing secret' }).inputValue()).toMatch(/^whsec_/);
    expect(await page.getByRole('textbox', { name: 'Signing secret' }).inputValue()).not.toBe(secret);

    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText(/Test event delivered: 204/).waitFor();
    await expect.poll(() => receiver.received.length).toBe(1);
    const testId = String(receiver.received[0]!.headers['webhook-id']);
    const group = page.locator(`tbody[data-message-id="${testId}"]`);
    await group.waitFor();
    const attempt = group.locator('tr.attempt');
    expect(await attempt.count()).toBe(1);
    expect(await attempt.textContent()).toMatch(/test.*204.*\d+ ms/);
    // the message's row names its event type
    expect(await group.locator('tr.message .event-type').textContent()).toBe('webhook.test');
  });

  it("gives the endpoint's page an address of its own: a reload keeps it, the menu's Webhooks goes back to the list", async () => {
    const { rows } = await p.pool.query<{ id: string }>(
      'SELECT id FROM webhook_endpoints WHERE workspace_id = $1 AND url = $2',
      [workspace.id, receiver.url],
    );
    const endpointPath = `/app/w/${workspace.slug}/webhooks/${rows[0]!.id}`;
    expect(new URL(page.url()).pathname).toBe(endpointPath);
    await page.reload();
    await page.getByRole('heading', { name: `Endpoint ${receiver.url}` }).waitFor();
    expect(new URL(page.url()).pathname).toBe(endpointPath);

    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/app/w/${workspace.slug}/webhooks`);
    // the list links to the endpoint's address, and the browser's back and forward move between them
    const open = page.getByRole('link', { name: `Open ${receiver.url}` });
    expect(await open.getAttribute('href')).toBe(endpointPath);
    await page.goBack();
    await page.getByRole('heading', { name: `Endpoint ${receiver.url}` }).waitFor();
    await page.getByRole('link', { name: '← All endpoints' }).click();
    await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
    await open.click();
    await page.getByRole('heading', { name: `Endpoint ${receiver.url}` }).waitFor();
    expect(new URL(page.url()).pathname).toBe(endpointPath);

    // an endpoint that is not there (deleted, or another workspace's) says so
    await page.goto(`${base}/app/w/${workspace.slug}/webhooks/00000000-0000-4000-8000-000000000000`);
    await page
      .getByText(
        'This workspace has no webhook endpoint “00000000-0000-4000-8000-000000000000” (it may have been deleted).',
      )
      .waitFor();
    await page.goto(`${base}${endpointPath}`);
    await page.getByRole('heading', { name: `Endpoint ${receiver.url}` }).waitFor();
  });

  it('shows the failed attempts of a message while the receiver fails, with the response excerpt', async () => {
    receiverDown = true;
    const before = receiver.received.length;
    await p.publish(workspace.slug, 'invoice.posted', { invoice: 'INV/2026/0007', amount: 420 });
    // the first attempt and both retries (200 ms, 400 ms) fail
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(before + 3);
    messageId = String(receiver.received.at(-1)!.headers['webhook-id']);
    const group = page.locator(`tbody[data-message-id="${messageId}"]`);
    // the page looks again by itself every few seconds
    await expect.poll(() => group.locator('tr.attempt').count(), { timeout: 15_000 }).toBe(3);
    const text = await group.textContent();
    expect(await group.locator('tr.message .event-type').textContent()).toBe('invoice.posted');
    expect(text).toContain('500');
    expect(text).toContain('receiver down for maintenance');
    await page.screenshot({ path: join(shots, 'webhooks.png'), fullPage: true });
  });

  it('replays the message once the receiver is back, and the new attempt succeeds', async () => {
    // its retries are over (its endpoint's retry workflow marked it failed)
    await untilFailed(messageId);
    receiverDown = false;
    const before = receiver.received.length;
    await page.getByRole('button', { name: `Replay ${messageId}` }).click();
    await page.getByText(`Message ${messageId} is being sent again.`).waitFor();
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(before + 1);
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(messageId);
    const replayed = page.locator(`tbody[data-message-id="${messageId}"] tr.attempt[data-outcome="ok"]`);
    await replayed.waitFor({ timeout: 15_000 });
    expect(await replayed.textContent()).toMatch(/replay.*204/);
  });

  it('replays every failed message of a time range', async () => {
    receiverDown = true;
    const before = receiver.received.length;
    await p.publish(workspace.slug, 'invoice.posted', { invoice: 'INV/2026/0008', amount: 13 });
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(before + 3);
    const failedId = String(receiver.received.at(-1)!.headers['webhook-id']);
    // the retries are over: its endpoint's retry workflow marked the delivery failed
    await untilFailed(failedId);
    receiverDown = false;
    const hourAgo = new Date(Date.now() - 3600_000);
    const local = new Date(hourAgo.getTime() - hourAgo.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    const form = page.getByRole('form', { name: 'Replay failed messages' });
    await form.getByLabel('From').fill(local);
    await form.getByRole('button', { name: 'Replay failed' }).click();
    await expect
      .poll(() => page.locator('.notice, .error').allTextContents())
      .toEqual(['1 failed message sent again.']);
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(before + 4);
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(failedId);
  });

  it('shows the newest 50 attempts and loads older ones on request, without gaps', async () => {
    const firstId = String(receiver.received[0]!.headers['webhook-id']);
    const { rows } = await p.pool.query<{ id: string }>(
      'SELECT id FROM webhook_endpoints WHERE workspace_id = $1 AND url = $2',
      [workspace.id, receiver.url],
    );
    const token = await login(base, owner);
    for (let i = 0; i < 50; i++) {
      const sent = await call(base, 'POST', `/api/portal/webhooks/${rows[0]!.id}/test`, {
        token,
        headers: { 'x-workspace': workspace.slug },
      });
      expect(sent.status).toBe(200);
    }
    const total = Number(
      (await p.pool.query('SELECT count(*) FROM webhook_attempts WHERE endpoint_id = $1', [rows[0]!.id])).rows[0].count,
    );
    expect(total).toBeGreaterThan(50);
    const shown = page.locator('tr.attempt');
    await expect.poll(() => page.locator('tbody[data-message-id^="msg_test_"]').count(), { timeout: 15_000 }).toBe(50);
    expect(await shown.count()).toBe(50);
    await page.getByText('50 attempts shown.').waitFor();
    // the first test event is older than the newest 50
    expect(await page.locator(`tbody[data-message-id="${firstId}"]`).count()).toBe(0);
    await page.getByRole('button', { name: 'Load older attempts' }).click();
    await page.getByText(`${total} attempts shown; there are no older ones.`).waitFor();
    expect(await shown.count()).toBe(total);
    await page.locator(`tbody[data-message-id="${firstId}"]`).waitFor();
    expect(await page.getByRole('button', { name: 'Load older attempts' }).count()).toBe(0);
    // a new attempt arriving meanwhile joins at the top, and the older ones stay
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText(/Test event delivered: 204/).waitFor();
    await expect.poll(() => shown.count()).toBe(total + 1);
    await page.locator(`tbody[data-message-id="${firstId}"]`).waitFor();
  });

  it('edits and disables the endpoint, and shows a problem from the API as a message', async () => {
    await page.getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('URL').fill('http://10.0.0.1/hook');
    await dialog.getByRole('button', { name: 'Save' }).click();
    // the API refuses a private address with a problem body; the dialog says why
    await expect.poll(() => dialog.getByRole('alert').textContent()).toMatch(/Invalid webhook URL/);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('The endpoint is disabled: it receives nothing until enabled.').waitFor();
    await page.getByRole('link', { name: '← All endpoints' }).click();
    const row = page.locator('tr', { hasText: receiver.url });
    await expect.poll(() => row.textContent()).toContain('Disabled');
  });

  it('shows an endpoint disabled after its receiver answered 410 Gone, with the reason, and offers no replay until it is enabled', async () => {
    const gone = await startReceiver(() => ({ status: 410, body: 'gone for good' }));
    try {
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('URL').fill(gone.url);
      await dialog.getByLabel(/Event types/).fill('payment.received');
      await dialog.getByRole('button', { name: 'Add endpoint' }).click();
      await dialog.getByRole('button', { name: 'Done' }).click();
      await page.getByRole('heading', { name: /^Endpoint/ }).waitFor();
      await p.publish(workspace.slug, 'payment.received', { payment: 'PAY/2026/0001', amount: 99 });
      await expect.poll(() => gone.received.length, { timeout: 20_000 }).toBe(1);
      const state = page.getByText('Disabled: the receiver answered 410 Gone');
      await expect.poll(() => state.count(), { timeout: 15_000 }).toBe(1);
      const goneId = String(gone.received[0]!.headers['webhook-id']);
      await page.locator(`tbody[data-message-id="${goneId}"]`).waitFor();
      // no replay while disabled, and the page says why
      expect(await page.getByRole('button', { name: `Replay ${goneId}` }).isDisabled()).toBe(true);
      await page.getByText('The endpoint is disabled: enable it to replay messages.').waitFor();
      expect(gone.received).toHaveLength(1);
      await page.getByRole('link', { name: '← All endpoints' }).click();
      const row = page.locator('tr', { hasText: gone.url });
      await expect.poll(() => row.textContent()).toContain('Disabled: the receiver answered 410 Gone');
      // and delete it, after a confirmation
      await page.getByRole('link', { name: `Open ${gone.url}` }).click();
      await page.getByRole('button', { name: 'Delete' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete endpoint' }).click();
      await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
      await row.waitFor({ state: 'detached' });
      expect(await page.locator('tr', { hasText: receiver.url }).count()).toBe(1);
    } finally {
      await gone.close();
    }
  });
});

describe('team page and the invitation link', () => {
  const invitee = `invitee-${randomUUID().slice(0, 8)}@example.test`;
  const inviteePassword = 'correct horse battery staple';
  let member: BrowserContext;

  it('lets the admin invite a member by e-mail, and lists the open invitation', async () => {
    await open(page, 'team', 'Team');
    // keyboard: the invite button opens the dialog, with the e-mail field focused
    await page.getByRole('button', { name: 'Invite someone' }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await page.keyboard.type(invitee);
    expect(await dialog.getByRole('radio', { name: /Member/ }).isChecked()).toBe(true);
    await dialog.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText(`An invitation was mailed to ${invitee}.`).waitFor();
    await page.locator(`tr[data-invitation="${invitee}"]`).waitFor();
    await expect.poll(() => p.mailsTo(invitee).length, { timeout: 10_000 }).toBe(1);
    await page.screenshot({ path: join(shots, 'team.png'), fullPage: true });
  });

  it('re-invites and revokes: the revoked link’s page says so at once, without a form', async () => {
    const other = `other-${randomUUID().slice(0, 8)}@example.test`;
    await page.getByRole('button', { name: 'Invite someone' }).click();
    await page.getByRole('dialog').getByLabel('E-mail').fill(other);
    await page.getByRole('dialog').getByRole('radio', { name: /Admin/ }).check();
    await page.getByRole('dialog').getByRole('button', { name: 'Send invitation' }).click();
    const row = page.locator(`tr[data-invitation="${other}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('admin');
    // inviting the same address again says what to do instead
    await page.getByRole('button', { name: 'Invite someone' }).click();
    await page.getByRole('dialog').getByLabel('E-mail').fill(other);
    await page.getByRole('dialog').getByRole('button', { name: 'Send invitation' }).click();
    await expect
      .poll(() => page.getByRole('dialog').getByRole('alert').textContent())
      .toBe(`${other} already has an open invitation: use Re-invite or Revoke in the list of open invitations.`);
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: `Re-invite ${other}` }).click();
    await page.getByText(`A new invitation link was mailed to ${other}`).waitFor();
    await expect.poll(() => row.textContent()).toContain('(2×)');
    await expect.poll(() => p.mailsTo(other).length, { timeout: 10_000 }).toBe(2);
    const { link } = linkIn(p.mailsTo(other).at(-1), `${base}/w/`);
    await page.getByRole('button', { name: `Revoke the invitation of ${other}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke invitation' }).click();
    await row.waitFor({ state: 'detached' });

    const stranger = await browser.newContext();
    const tab = await stranger.newPage();
    await tab.goto(link);
    // said at once, with what to do, and no form: only an admin can invite again
    await expect
      .poll(() => tab.getByRole('alert').textContent())
      .toBe('This invitation was revoked; ask an admin of the workspace for a new one.');
    expect(await tab.getByLabel(/Password/).count()).toBe(0);
    expect(await tab.getByRole('button', { name: 'Send me a new link' }).count()).toBe(0);
    await tab.getByRole('link', { name: 'Sign in' }).waitFor();
    await stranger.close();
  });

  it('opens the mailed link in another browser on the accept page; setting a password joins and signs in', async () => {
    const { link } = linkIn(p.mailsTo(invitee)[0], `${base}/w/`);
    expect(link.startsWith(`${base}/w/${workspace.slug}/join#token=`)).toBe(true);
    member = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const tab = await member.newPage();
    await tab.goto(link);
    // the redirect into the portal keeps the token in the fragment
    await tab.getByRole('heading', { name: `Join the workspace “${workspace.slug}”` }).waitFor();
    expect(new URL(tab.url()).pathname).toBe(`/app/w/${workspace.slug}/join`);
    await tab.getByLabel(/Your name/).fill('Grace Hopper');
    await tab.getByLabel(/Password/).fill('short');
    await tab.getByRole('button', { name: 'Join the workspace' }).click();
    await expect.poll(() => tab.getByRole('alert').textContent()).toMatch(/at least 10 characters/);
    await tab.getByLabel(/Password/).fill(inviteePassword);
    await tab.screenshot({ path: join(shots, 'join.png') });
    await tab.getByRole('button', { name: 'Join the workspace' }).click();
    await tab.getByRole('heading', { name: 'Dashboard' }).waitFor();
    expect(new URL(tab.url()).pathname).toBe(`/app/w/${workspace.slug}/`);
    expect(new URL(tab.url()).hash).toBe('');
  });

  it('the member signs in with the new password and sees no admin actions', async () => {
    const tab = member.pages()[0]!;
    await tab.getByRole('button', { name: 'Sign out' }).click();
    await signIn(tab, { email: invitee, password: inviteePassword });
    const nav = tab.getByRole('navigation', { name: 'Workspace' });
    for (const section of ['Dashboard', 'Team', 'Subscription', 'Integrations', 'Settings', 'Profile'])
      await nav.getByRole('link', { name: section }).waitFor();
    for (const section of ['API keys', 'Execution log', 'Webhooks'])
      expect(await nav.getByRole('link', { name: section }).count()).toBe(0);

    await nav.getByRole('link', { name: 'Team' }).click();
    await tab.getByRole('heading', { name: 'Team' }).waitFor();
    await tab.locator('td', { hasText: invitee }).waitFor();
    expect(await tab.getByRole('button', { name: 'Invite someone' }).count()).toBe(0);
    expect(await tab.getByRole('heading', { name: 'Open invitations' }).count()).toBe(0);
    expect(
      await tab
        .getByRole('button')
        .filter({ hasText: /Re-invite|Revoke/ })
        .count(),
    ).toBe(0);

    // an admin page opened by its address is not offered either
    await tab.goto(`${base}/app/w/${workspace.slug}/webhooks`);
    await tab.getByText('There is no page “webhooks” here for a member.').waitFor();

    await tab.goto(`${base}/app/w/${workspace.slug}/settings`);
    await tab.getByText('Only the workspace’s admins can change these.').waitFor();
    expect(await tab.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    expect(await tab.getByLabel('Display name').isDisabled()).toBe(true);

    await tab.goto(`${base}/app/w/${workspace.slug}/billing`);
    await tab.getByRole('heading', { name: 'Subscription' }).waitFor();
    expect(await tab.getByRole('heading', { name: 'Invoices' }).count()).toBe(0);
    await member.close();
  });

  it('shows the admin the new member, and no open invitation for them', async () => {
    await page.reload();
    await page.locator('td', { hasText: invitee }).waitFor();
    expect(await page.locator(`tr[data-invitation="${invitee}"]`).count()).toBe(0);
  });

  it('lets the admin make the member an admin and back; the only admin is offered no way to step down or leave, and the API refuses both', async () => {
    const row = page.locator(`tr[data-member="${invitee}"]`);
    const role = row.locator('td').nth(2);
    const mine = page.locator(`tr[data-member="${owner.email}"]`);
    expect(await mine.textContent()).toContain('(you)');
    const ownButtons = () =>
      Promise.all([
        page.getByRole('button', { name: `Make ${owner.email} a member` }).count(),
        page.getByRole('button', { name: `Remove ${owner.email}` }).count(),
      ]);
    // the owner is the only admin: nothing on offer that would leave the workspace without one, and the row says why
    expect(await role.textContent()).toBe('member');
    expect(await ownButtons()).toEqual([0, 0]);
    expect(await mine.locator('[data-only-admin]').textContent()).toBe(
      'The only admin: make another member admin before stepping down or leaving.',
    );
    await page.screenshot({ path: join(shots, 'team-only-admin.png'), fullPage: true });

    await page.getByRole('button', { name: `Make ${invitee} an admin` }).click();
    await page.getByText('Grace Hopper is an admin now.').waitFor();
    await expect.poll(() => role.textContent()).toBe('admin');
    // two admins: either may step down or leave
    await expect.poll(ownButtons).toEqual([1, 1]);
    expect(await mine.locator('[data-only-admin]').count()).toBe(0);
    await page.getByRole('button', { name: `Make ${invitee} a member` }).click();
    await page.getByText('Grace Hopper is a member now (no admin actions).').waitFor();
    await expect.poll(() => role.textContent()).toBe('member');
    await expect.poll(ownButtons).toEqual([0, 0]);

    // and the API refuses both to the only admin with a problem
    const token = await login(base, owner);
    const { rows } = await p.pool.query<{ id: string }>('SELECT id FROM users WHERE email = $1', [owner.email]);
    const query = `?workspace=${workspace.slug}`;
    const demoted = await call(base, 'PATCH', `/api/portal/team/${rows[0]!.id}${query}`, {
      token,
      body: { role: 'member' },
    });
    const removed = await call(base, 'DELETE', `/api/portal/team/${rows[0]!.id}${query}`, { token });
    for (const [res, what] of [
      [demoted, 'demoted'],
      [removed, 'removed'],
    ] as const) {
      expect(res.status).toBe(409);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body.detail).toBe(
        `The last admin of workspace "${workspace.slug}" cannot be ${what}: make another member admin first.`,
      );
    }
    await page.reload();
    await mine.waitFor();
    expect(await mine.locator('td').nth(2).textContent()).toBe('admin');
  });

  it('removes the member after a confirmation saying they lose access at once; their open portal falls back to sign-in', async () => {
    member = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const tab = await member.newPage();
    await signIn(tab, { email: invitee, password: inviteePassword });

    await page.getByRole('button', { name: `Remove ${invitee}` }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain(`Grace Hopper (${invitee}) loses access to this workspace at once`);
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    await page.getByText('Grace Hopper was removed from the workspace.').waitFor();
    await page.locator(`tr[data-member="${invitee}"]`).waitFor({ state: 'detached' });

    // the member's session has ended: their next page load asks them to sign in, and signed in again they have no workspace
    await tab.goto(`${base}/app/w/${workspace.slug}/team`);
    await tab.getByRole('heading', { name: 'Sign in to Plana' }).waitFor();
    await tab.getByLabel('E-mail').fill(invitee);
    await tab.getByLabel('Password').fill(inviteePassword);
    await tab.getByRole('button', { name: 'Sign in' }).click();
    await tab.getByText(`You are not a member of workspace “${workspace.slug}”.`).waitFor();
    await member.close();
  });
});

describe('subscription and invoices page', () => {
  it('shows the tier, status, next invoice and the seeded invoice with its PDF and hosted page', async () => {
    const hook = `${base}/api/webhooks/stripe`;
    const ids = sandboxIds(workspace.slug);
    const send = (evt: Parameters<typeof sendEvent>[2]) => sendEvent(hook, p.cfg.STRIPE_WEBHOOK_SECRET, evt);
    expect(
      (
        await send(
          event(
            'customer.subscription.created',
            subscription({ ...ids, id: ids.subscription, workspace: workspace.slug, tier: 'pro', seats: 3 }),
          ),
        )
      ).status,
    ).toBe(200);
    const inv = invoice({ ...ids, workspace: workspace.slug, tier: 'pro', seats: 3, status: 'paid' });
    expect((await send(event('invoice.paid', inv))).status).toBe(200);

    await open(page, 'billing', 'Subscription');
    const facts = page.locator('dl.facts');
    await expect.poll(() => facts.textContent()).toMatch(/Plan\s*pro/i);
    expect(await facts.textContent()).toContain('Active');
    expect(await facts.textContent()).toMatch(/Seats\s*3/);
    const row = page.locator(`tr[data-invoice-id="${inv.id}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain(inv.number!);
    expect(await row.textContent()).toContain('paid');
    expect(await row.getByRole('link', { name: /PDF/ }).getAttribute('href')).toBe(inv.invoice_pdf);
    expect(await row.getByRole('link', { name: /View/ }).getAttribute('href')).toBe(inv.hosted_invoice_url);
    await page.screenshot({ path: join(shots, 'subscription.png'), fullPage: true });
  });

  it('shows integrations, and the pages fit a narrow screen', async () => {
    await open(page, 'integrations', 'Integrations');
    await page.locator('[data-integration]').first().waitFor();
    expect(await page.locator('[data-integration]').count()).toBeGreaterThanOrEqual(4);
    await page.screenshot({ path: join(shots, 'integrations.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    const { rows } = await p.pool.query<{ id: string }>(
      'SELECT id FROM webhook_endpoints WHERE workspace_id = $1 AND url = $2',
      [workspace.id, receiver.url],
    );
    for (const [section, heading] of [
      ['webhooks', 'Webhooks'],
      [`webhooks/${rows[0]!.id}`, `Endpoint ${receiver.url}`],
      ['keys', 'API keys'],
      ['log', 'Execution log'],
      ['team', 'Team'],
      ['billing', 'Subscription'],
      ['integrations', 'Integrations'],
      ['settings', 'Settings'],
      ['profile', 'Your profile'],
    ] as const) {
      await open(page, section, heading);
      await page
        .getByRole('status')
        .filter({ hasText: /^Loading/ })
        .first()
        .waitFor({ state: 'detached' });
      // the whole menu on the screen, on as many lines as it takes: no section's link cut off or scrolled away
      const menu = await page.getByRole('navigation', { name: 'Workspace' }).evaluate((nav) => {
        const width = document.documentElement.clientWidth;
        return {
          links: nav.querySelectorAll('a').length,
          off: [...nav.querySelectorAll('a')]
            .filter((a) => a.getBoundingClientRect().right > width + 1 || a.getBoundingClientRect().left < -1)
            .map((a) => a.textContent),
          scrolls: [nav, ...nav.querySelectorAll('*')].some((el) => el.scrollWidth > el.clientWidth + 1),
        };
      });
      expect({ section, menu }).toEqual({ section, menu: { links: 9, off: [], scrolls: false } });
      // nothing sticks out of the page (wide tables scroll inside their own box)
      const sticking = await page.evaluate(() => {
        const width = document.documentElement.clientWidth;
        const scrolls = (el: Element | null): boolean =>
          !!el && el !== document.body && (getComputedStyle(el).overflowX !== 'visible' || scrolls(el.parentElement));
        const out = [...document.querySelectorAll('body *')].filter(
          (el) => el.getBoundingClientRect().right > width + 1 && !scrolls(el.parentElement),
        );
        return out.map((el) => `${el.tagName.toLowerCase()}.${el.className}`).slice(0, 5);
      });
      await page.screenshot({ path: join(shots, `${section.replace('/', '-')}-narrow.png`), fullPage: true });
      expect({ section, sticking }).toEqual({ section, sticking: [] });
      // and every column of every table is on the screen (rows stack), none cut off at the edge
      expect({ section, offScreen: await cellsOffScreen(page) }).toEqual({ section, offScreen: [] });
    }
  });
});

describe('settings and profile pages', () => {
  it('lets the admin change the settings, which a reload shows', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await open(page, 'settings', 'Settings');
    await page.getByLabel('Display name').fill('Acme Holding');
    await page.getByLabel('Time zone').selectOption('Europe/Zurich');
    await page.getByRole('checkbox', { name: 'Product news' }).check();
    await page.getByLabel(/Language and region/).fill('de-ch');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings saved.').waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Settings' }).waitFor();
    await expect.poll(() => page.getByLabel('Display name').inputValue()).toBe('Acme Holding');
    // the API keeps the canonical form of the tag
    expect(await page.getByLabel(/Language and region/).inputValue()).toBe('de-CH');
    expect(await page.getByLabel('Time zone').inputValue()).toBe('Europe/Zurich');
    expect(await page.getByRole('checkbox', { name: 'Product news' }).isChecked()).toBe(true);
  });

  it('changes the name, the password, and the e-mail address once confirmed from the mailed link', async () => {
    await open(page, 'profile', 'Your profile');
    const nameForm = page.getByRole('form', { name: 'Name' });
    await nameForm.getByLabel('Your name').fill('Ada Lovelace');
    await nameForm.getByRole('button', { name: 'Save name' }).click();
    await nameForm.getByText('Name saved.').waitFor();

    const passwordForm = page.getByRole('form', { name: 'Password' });
    await passwordForm.getByLabel('Current password').fill('not my password');
    await passwordForm.getByLabel(/^New password \(/).fill('a brand new password');
    await passwordForm.getByLabel('New password again').fill('a brand new password');
    await passwordForm.getByRole('button', { name: 'Change password' }).click();
    // the API's 403 problem, as a message
    await expect.poll(() => passwordForm.getByRole('alert').textContent()).toMatch(/password/i);
    await passwordForm.getByLabel('Current password').fill(owner.password);
    await passwordForm.getByRole('button', { name: 'Change password' }).click();
    await passwordForm.getByText(/^Password changed/).waitFor();
    owner = { ...owner, password: 'a brand new password' };

    const emailForm = page.getByRole('form', { name: 'E-mail address' });
    const requestChange = async (address: string) => {
      await emailForm.getByLabel('New e-mail address').fill(address);
      await emailForm.getByLabel('Current password').fill(owner.password);
      await emailForm.getByRole('button', { name: 'Change e-mail address' }).click();
      await emailForm.getByText(`Change to ${address} pending: we sent a confirmation link to that address`).waitFor();
    };
    // an address another account uses: the page shows the same pending change; that account is told, and keeps its address
    const other = await addUser(p.pool, [{ workspaceId: workspace.id, role: 'member' }]);
    await requestChange(other.email);
    expect(await emailForm.getByRole('alert').count()).toBe(0);
    await expect.poll(() => p.mailsTo(other.email).length, { timeout: 10_000 }).toBe(1);
    expect(p.mailsTo(other.email)[0]!.text).toContain('nothing was changed');

    const to = `moved-${randomUUID().slice(0, 8)}@example.test`;
    await requestChange(to);
    await page.screenshot({ path: join(shots, 'profile.png'), fullPage: true });
    await expect.poll(() => p.mailsTo(to).length, { timeout: 10_000 }).toBe(1);
    const { link } = linkIn(p.mailsTo(to)[0], `${base}/account/confirm-email`);

    const otherBrowser = await browser.newContext();
    const tab = await otherBrowser.newPage();
    await tab.goto(link);
    await tab.getByRole('heading', { name: 'Confirm your e-mail address' }).waitFor();
    await tab.getByRole('button', { name: 'Confirm' }).click();
    await tab.getByText(`Done: you sign in as ${to} from now on.`).waitFor();
    expect(new URL(tab.url()).hash).toBe('');
    // the link works once: opened again, it says so
    await tab.goto(link);
    await tab.getByRole('button', { name: 'Confirm' }).click();
    await expect
      .poll(() => tab.getByRole('alert').textContent())
      .toMatch(/^This e-mail address was confirmed already\./);
    expect(await tab.getByRole('button', { name: 'Confirm' }).count()).toBe(0);
    await tab.screenshot({ path: join(shots, 'confirm-email-used.png') });
    await otherBrowser.close();

    await page.reload();
    await page.getByText(`You sign in as ${to}.`).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, { email: to, password: owner.password });
  });
});

describe('the workspace link of the e-mails, /w/<slug>', () => {
  it('opens sign-in, then that workspace (not the list of the person’s workspaces)', async () => {
    const second = await addWorkspace(p.pool);
    const person = await addUser(p.pool, [
      { workspaceId: workspace.id, role: 'member' },
      { workspaceId: second.id, role: 'admin' },
    ]);
    const mail = welcomeEmail({ email: person.email, workspace: second.slug, appUrl: base });
    const link = new RegExp(`${base}/w/[a-z0-9-]+`).exec(mail.text)?.[0];
    expect(link).toBe(`${base}/w/${second.slug}`);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const tab = await context.newPage();
    await tab.goto(link!);
    await tab.getByRole('heading', { name: 'Sign in to Plana' }).waitFor();
    expect(new URL(tab.url()).pathname).toBe(`/app/w/${second.slug}/`);
    // no identity provider is configured here: the page offers no organisation sign-in
    await tab.getByRole('button', { name: 'Forgot your password?' }).waitFor();
    expect(await tab.getByRole('link', { name: /organisation’s account/ }).count()).toBe(0);
    await tab.getByLabel('E-mail').fill(person.email);
    await tab.getByLabel('Password').fill(person.password);
    await tab.getByRole('button', { name: 'Sign in' }).click();
    await tab.getByRole('heading', { name: 'Dashboard' }).waitFor();
    expect(new URL(tab.url()).pathname).toBe(`/app/w/${second.slug}/`);
    expect(await tab.locator('.workspace-name').textContent()).toBe(`Workspace ${second.slug}`);
    // an admin there: the admin pages are in the menu
    await tab.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'API keys' }).waitFor();

    // signed in, the link opens the workspace straight away
    await tab.goto(`${base}/w/${workspace.slug}`);
    await tab.getByRole('heading', { name: 'Dashboard' }).waitFor();
    expect(new URL(tab.url()).pathname).toBe(`/app/w/${workspace.slug}/`);
    // a member there: no admin pages
    expect(
      await tab.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'API keys' }).count(),
    ).toBe(0);

    // a workspace that does not exist is a clear 404, not the portal
    const unknown = uniqueSlug('none');
    const res = await tab.goto(`${base}/w/${unknown}`);
    expect(res!.status()).toBe(404);
    expect(res!.headers()['content-type']).toMatch(/^application\/problem\+json/);
    expect((await res!.json()).detail).toBe(`There is no workspace "${unknown}".`);
    await context.close();
  });

  it('tells a known workspace (302) from an unknown one (404) without a session: slugs are public, as their ERP host names are (docs/workspace-admins.md)', async () => {
    const known = await fetch(`${base}/w/${workspace.slug}`, { redirect: 'manual' });
    expect([known.status, known.headers.get('location')]).toEqual([302, `/app/w/${workspace.slug}/`]);
    const unknown = await fetch(`${base}/w/${uniqueSlug('none')}`, { redirect: 'manual' });
    expect(unknown.status).toBe(404);
  });
});

/** Waits until the message's retries are over: its delivery is recorded as failed. */
async function untilFailed(messageId: string): Promise<void> {
  await expect
    .poll(
      async () =>
        (await p.pool.query('SELECT status FROM webhook_deliveries WHERE message_id = $1', [messageId])).rows[0]
          ?.status,
      { timeout: 20_000 },
    )
    .toBe('failed');
}
