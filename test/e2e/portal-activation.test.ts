/**
 * One identity in Chromium (Debian's, driven by playwright-core) on the real platform: a
 * TenantClient applied turns Ready, the owner's welcome e-mail (read from the SMTP stand-in)
 * carries the activation link, which opens the portal's page to choose a password and lands on the
 * workspace's dashboard; the used link's page says so before any password is typed and offers a
 * new one; "Forgot your password?" mails a link by which the owner chooses a new password, signed
 * in, and the earlier session ends.
 *
 * Screenshots go to a temporary folder, or to docs/screenshots/ with PORTAL_SCREENSHOTS=1.
 */
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/chromium.js';
import { linkIn, screenshotsDir } from '../support/portal.js';
import {
  applyTenant,
  isReady,
  mailsTo,
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../support/tenant-platform.js';

const shots = screenshotsDir();

let p: TenantPlatform;
let base: string;
let browser: Browser;
const tenant = uniqueTenant('own');
const owner = `owner@${tenant}.test`;

beforeAll(async () => {
  p = await startTenantPlatform();
  base = p.cfg.API_PUBLIC_URL;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await p?.close();
});

const newPage = async (): Promise<Page> =>
  (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();

/** The owner's mails once there are `n`. */
async function mails(n: number) {
  await expect.poll(() => mailsTo(p, owner).length, { timeout: 60_000 }).toBe(n);
  return mailsTo(p, owner);
}

describe('from the welcome e-mail to the dashboard, in Chromium', () => {
  let ownerPage: Page;
  let activation: string;

  it('a tenant turns Ready; the welcome e-mail’s link lets the owner choose a password and opens the dashboard', async () => {
    expect(await applyTenant(p, tenant, { ownerEmail: owner })).toBe('created');
    await waitForStatus(p, tenant, (s) => isReady(s) && s.provisionedEventId !== undefined, 90_000);
    const [welcome] = await mails(1);
    expect(welcome!.subject).toContain(`"${tenant}" is ready`);
    activation = linkIn(welcome, `${base}/w/${tenant}/activate#token=`).link;

    ownerPage = await newPage();
    await ownerPage.goto(activation);
    await ownerPage.getByRole('heading', { name: `Welcome to your workspace “${tenant}”` }).waitFor();
    await ownerPage.screenshot({ path: join(shots, 'activate.png') });
    await ownerPage.getByLabel('Password').fill('short');
    await ownerPage.getByRole('button', { name: 'Set my password' }).click();
    await expect.poll(() => ownerPage.getByRole('alert').textContent()).toMatch(/at least 10 characters/);
    await ownerPage.getByLabel('Password').fill('the owner chose this');
    await ownerPage.getByRole('button', { name: 'Set my password' }).click();
    await ownerPage.getByRole('heading', { name: 'Dashboard' }).waitFor();
    expect(new URL(ownerPage.url()).pathname).toBe(`/app/w/${tenant}/`);
    // the token has left the address bar
    expect(ownerPage.url()).not.toContain('token');
  });

  it('the used link opens a page that says so at once, without a password form, and sends a new link', async () => {
    const page = await newPage();
    await page.goto(activation);
    await expect
      .poll(() => page.getByRole('alert').textContent())
      .toBe('This link was used already: your password is set. Sign in, or ask for a new link.');
    expect(await page.getByLabel('Password').count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Sign in' }).getAttribute('href')).toBe(`/app/w/${tenant}/`);
    await page.screenshot({ path: join(shots, 'activate-used.png') });
    await page.getByRole('button', { name: 'Send me a new link' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/A new link is on its way/);
    // the owner's address gets a password link (their account has its password now)
    const all = await mails(2);
    expect(linkIn(all[1], `${base}/account/reset-password#token=`).link).toBeTruthy();
    await page.context().close();
  });

  it('forgot the password: an e-mailed link, a new password, signed in; the earlier session ends', async () => {
    const page = await newPage();
    await page.goto(`${base}/app/w/${tenant}/`);
    await page.getByRole('heading', { name: 'Sign in to Plana' }).waitFor();
    // no identity provider configured here: no organisation sign-in on offer
    await expect.poll(() => page.getByRole('button', { name: 'Forgot your password?' }).count()).toBe(1);
    expect(await page.getByText('organisation’s account').count()).toBe(0);
    await page.getByRole('button', { name: 'Forgot your password?' }).click();
    await page.getByLabel('E-mail').fill(owner);
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/If an account uses this address/);
    const reset = linkIn((await mails(3))[2], `${base}/account/reset-password#token=`).link;

    await page.goto(reset);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await page.screenshot({ path: join(shots, 'reset-password.png') });
    await page.getByLabel('New password').fill('a new password for the owner');
    await page.getByRole('button', { name: 'Set my new password' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/app/w/${tenant}/`);

    // the session the activation started has ended: a reload asks to sign in
    await ownerPage.reload();
    await ownerPage.getByRole('heading', { name: 'Sign in to Plana' }).waitFor();

    // the reset link, used: its page says so and offers to ask for a new one
    const again = await newPage();
    await again.goto(reset);
    await again.getByLabel('New password').fill('yet another password');
    await again.getByRole('button', { name: 'Set my new password' }).click();
    await expect.poll(() => again.getByRole('alert').textContent()).toMatch(/was used already/);
    await again.getByRole('button', { name: 'Send me a link' }).waitFor();
  });
});
