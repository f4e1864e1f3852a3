/** `/w/<slug>`, where the welcome e-mail links: on to the workspace in the portal for a known workspace, a problem for anything else. */
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

it('the link of the welcome e-mail leads into the portal, to that workspace', async () => {
  const mail = welcomeEmail({ email: 'owner@acme.test', workspace: slug, appUrl: api.base });
  const link = /https?:\/\/\S+\/w\/[a-z0-9-]+/.exec(mail.text)?.[0];
  expect(link).toBe(`${api.base}/w/${slug}`);

  const res = await fetch(link!, { redirect: 'manual' });
  expect(res.status).toBe(302);
  expect(res.headers.get('location')).toBe(`/app/w/${slug}/`);
  expect(res.headers.get('cache-control')).toBe('no-store');
  // and the portal answers there (the single-page app, which asks for sign-in)
  const portal = await fetch(new URL(res.headers.get('location')!, link));
  expect(portal.status).toBe(200);
  expect(portal.headers.get('content-type')).toMatch(/^text\/html/);
  expect(await portal.text()).toContain('<div id="root">');
});

it('an unknown workspace is a 404 problem, an impossible slug a 400 problem', async () => {
  const unknown = await fetch(`${api.base}/w/${uniqueSlug('none')}`);
  expect(unknown.status).toBe(404);
  expect(unknown.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  const invalid = await fetch(`${api.base}/w/-bad-`);
  expect(invalid.status).toBe(400);
  expect(invalid.headers.get('content-type')).toMatch(/^application\/problem\+json/);
});
