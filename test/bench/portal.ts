/**
 * `npm run bench:portal`: the portal's time to the dashboard's first chart in Chromium, against a
 * running `npm run dev` stack (the demo workspace and its ERP tenant). Prints: sign-in → chart
 * painted, and a reload (session restored from the refresh cookie) → chart painted, as the median
 * of a few runs; plus the built JS size (gzip).
 *
 *   PORTAL_URL (default API_PUBLIC_URL or http://127.0.0.1:3000), DEMO_PASSWORD (default .data/dev-admin-password)
 */
import { readFileSync, readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { launchChromium } from '../support/chromium.js';

const base = process.env.PORTAL_URL ?? process.env.API_PUBLIC_URL ?? 'http://127.0.0.1:3000';
const password = process.env.DEMO_PASSWORD ?? readFileSync('.data/dev-admin-password', 'utf8').trim();
const runs = 5;

const assets = new URL('../../web/dist/assets/', import.meta.url);
const js = readdirSync(assets).filter((f) => f.endsWith('.js'));
const gz = js.reduce((n, f) => n + gzipSync(readFileSync(new URL(f, assets)), { level: 9 }).length, 0);
console.log(`built JS: ${js.length} file(s), ${(gz / 1024).toFixed(1)} KiB gzip`);

const browser = await launchChromium();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const signIn: number[] = [];
const reload: number[] = [];
try {
  for (let i = 0; i < runs; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/app/`);
    await page.getByLabel('E-mail').fill('admin@demo.test');
    await page.getByLabel('Password').fill(password);
    let t = performance.now();
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('img', { name: /Cash flow per month/ }).waitFor();
    signIn.push(performance.now() - t);
    t = performance.now();
    await page.reload();
    await page.getByRole('img', { name: /Cash flow per month/ }).waitFor();
    reload.push(performance.now() - t);
    await context.close();
  }
} finally {
  await browser.close();
}
console.log(
  `sign-in → first chart: median ${median(signIn).toFixed(0)} ms (${signIn.map((x) => x.toFixed(0)).join(', ')})`,
);
console.log(
  `reload → first chart:  median ${median(reload).toFixed(0)} ms (${reload.map((x) => x.toFixed(0)).join(', ')})`,
);
