/**
 * The portal's tests: an account API, the notifications service and the SMTP sink on the run's
 * real servers, and the links read from the mails the sink caught.
 */
import { mkdirSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { startNotifications } from '../../services/notifications/server.js';
import { readMailbox, startSmtpSink, type StoredMail } from '../../sandbox/smtp/sink.js';
import { startTestApi } from './api.js';
import { tempDir } from './env.js';

/** Where the portal's screenshots go: PORTAL_SHOTS_DIR, docs/screenshots/ with PORTAL_SCREENSHOTS=1, else a temporary folder. */
export function screenshotsDir(): string {
  const dir =
    process.env.PORTAL_SHOTS_DIR ??
    (process.env.PORTAL_SCREENSHOTS === '1' ? 'docs/screenshots' : tempDir('screenshots'));
  mkdirSync(dir, { recursive: true });
  return dir;
}

export async function startPortal(overrides: Record<string, string> = {}) {
  const api = await startTestApi(overrides);
  const sink = await startSmtpSink({ port: api.cfg.SMTP_PORT, dir: tempDir('mail') });
  let notifications: Awaited<ReturnType<typeof startNotifications>> | undefined = await startNotifications(api.cfg);
  return {
    ...api,
    sink,
    /** The mails sent to `address` so far, oldest first. */
    mailsTo: (address: string): StoredMail[] =>
      readMailbox(sink.dir).filter((m) => m.to.includes(address.toLowerCase()) || m.to.includes(address)),
    async stopNotifications() {
      await notifications?.close();
      notifications = undefined;
    },
    async startNotifications() {
      notifications ??= await startNotifications(api.cfg);
    },
    async close() {
      await notifications?.close();
      await sink.close();
      await api.close();
    },
  };
}

export type Portal = Awaited<ReturnType<typeof startPortal>>;

/** The link in a mail's text that starts with `prefix`, and the token in its fragment. */
export function linkIn(mail: StoredMail | undefined, prefix: string): { link: string; token: string } {
  if (!mail) throw new Error('no mail');
  const link = mail.text.split(/\s+/).find((w) => w.startsWith(prefix));
  if (!link) throw new Error(`no link starting with ${prefix} in:\n${mail.text}`);
  const token = new URLSearchParams(new URL(link).hash.slice(1)).get('token');
  if (!token) throw new Error(`no token in ${link}`);
  return { link, token };
}

/**
 * The table cells of the page a person cannot see without scrolling sideways (outside the
 * viewport's width), as "column: text" (at most 5): none when every column of every table fits.
 */
export const cellsOffScreen = (page: Page) =>
  page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const off = [...document.querySelectorAll('table td')].filter((td) => {
      const box = td.getBoundingClientRect();
      return box.width > 0 && (box.right > width + 1 || box.left < -1);
    });
    return off
      .slice(0, 5)
      .map((td) => `${(td as HTMLElement).dataset.label ?? '?'}: ${(td.textContent ?? '').slice(0, 40)}`);
  });
