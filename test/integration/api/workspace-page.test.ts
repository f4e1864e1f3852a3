/** `/w/<slug>`, where the welcome e-mail links: a page for a known workspace, a problem for anything else. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { welcomeEmail } from '../../../services/notifications/welcome-email.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { uniqueSlug } from '../../support/workspace-api.js';

let api: TestApi;
let slug: string;

beforeAll(async () => {
  api = await startTestApi();
  slug = uniqueSlug('page');
  await api.pool.query('INSERT INTO workspaces (slug, name) VALUES ($1, $2)', [slug, 'Acme <Tools> & Co']);
});

afterAll(async () => {
  await api?.close();
});

it('the link of the welcome e-mail opens a page naming the workspace, with sign-in and API docs links', async () => {
  const mail = welcomeEmail({ email: 'owner@acme.test', workspace: slug, appUrl: api.base });
  const link = /https?:\/\/\S+\/w\/[a-z0-9-]+/.exec(mail.text)?.[0];
  expect(link).toBe(`${api.base}/w/${slug}`);

  const res = await fetch(link!);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await res.text();
  expect(html).toContain('<h1>Acme &lt;Tools&gt; &amp; Co</h1>');
  expect(html).toContain('href="/api/auth/oidc/start"');
  expect(html).toContain('href="/docs"');
});

it('an unknown workspace is a 404 problem, an impossible slug a 400 problem', async () => {
  const unknown = await fetch(`${api.base}/w/${uniqueSlug('none')}`);
  expect(unknown.status).toBe(404);
  expect(unknown.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const invalid = await fetch(`${api.base}/w/-bad-`);
  expect(invalid.status).toBe(400);
  expect(invalid.headers.get('content-type')).toMatch(/^application\/problem\+json/);
});
