/**
 * The secrets of the sign-in paths, kept out of the logs: the account API, the auth service (the
 * platform's OpenID provider) and the notifications service, each logging at trace level into a
 * buffer, on the run's PostgreSQL and Redis with the ERP stand-in and the SMTP sink. "Open ERP"
 * (the API's hand-off link, consumed by the provider; the ERP's code exchange with its client
 * secret at the provider's token endpoint) and the welcome e-mail's activation link, issued by the
 * notifications service and used at the API; then every log is searched for each secret.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DestinationStream } from 'pino';
import { startApi } from '../../api/server.js';
import { erpApiUserDeps } from '../../domain/erp/admin-session.js';
import { ensureErpSignInProvider } from '../../domain/identity/erp-sign-in.js';
import { ensureTenantClient, erpRedirectUri, oidcProviderIssuer } from '../../domain/identity/oidc-clients.js';
import type { Config } from '../../lib/config.js';
import { freePort } from '../../scripts/local-servers.js';
import { startAuth } from '../../services/auth/server.js';
import { startNotifications } from '../../services/notifications/server.js';
import { readMailbox, startSmtpSink, type SmtpSink } from '../../sandbox/smtp/sink.js';
import { erpTestConfig, startErpTestBed, type ErpTestBed, type TestTenant } from '../support/erp-tenant.js';
import { tempDir } from '../support/env.js';
import { Browser } from '../support/http-browser.js';
import { linkIn } from '../support/portal.js';
import { testKeys } from '../support/service-keys.js';
import { addUser, call } from '../support/workspace-api.js';

/** A service's log lines, kept in memory. */
function logBuffer() {
  let text = '';
  const stream: DestinationStream = { write: (line: string) => void (text += line) };
  return { stream, text: () => text };
}

const logs = { api: logBuffer(), auth: logBuffer(), notifications: logBuffer() };
const allLogs = () => Object.values(logs).map((l) => l.text());
const PASSWORD = 'correct horse battery staple';

let bed: ErpTestBed;
let cfg: Config;
let sink: SmtpSink;
let api: Awaited<ReturnType<typeof startApi>>;
let auth: Awaited<ReturnType<typeof startAuth>>;
let notifications: Awaited<ReturnType<typeof startNotifications>>;
let tenant: TestTenant;
let erpBaseUrl: string;

beforeAll(async () => {
  const authPort = await freePort();
  bed = await startErpTestBed();
  const erpPort = new URL(bed.erp.url).port;
  cfg = await erpTestConfig({
    ERP_URL: bed.erp.url,
    AUTH_PORT: String(authPort),
    AUTH_URL: `http://127.0.0.1:${authPort}`,
    TENANT_BASE_URL: `http://{host}:${erpPort}`,
    LOG_LEVEL: 'trace',
  });
  sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: tempDir('mail') });
  auth = await startAuth(cfg, { logStream: logs.auth.stream });
  api = await startApi(cfg, { logStream: logs.api.stream });
  notifications = await startNotifications(cfg, { logStream: logs.notifications.stream });
  tenant = await bed.provision({ tier: 'starter', version: '18' });
  erpBaseUrl = `http://${tenant.host}:${erpPort}`;
}, 60_000);
afterAll(async () => {
  await notifications?.close();
  await api?.close();
  await auth?.close();
  await sink?.close();
  await bed?.close();
});

describe('the logs of the API, the OpenID provider and the notifications service', () => {
  it("hold neither Open ERP's hand-off token nor the ERP's client secret", async () => {
    const client = await ensureTenantClient(bed.pool, cfg.SECRETS_KEY, tenant.name, erpRedirectUri(erpBaseUrl));
    await ensureErpSignInProvider(
      erpApiUserDeps(cfg, bed.pool, bed.erp.url),
      tenant.database,
      oidcProviderIssuer(cfg),
      client,
    );
    const workspaceId = (
      await bed.pool.query<{ workspace_id: string }>('SELECT workspace_id FROM tenants WHERE name = $1', [tenant.name])
    ).rows[0]!.workspace_id;
    const member = await addUser(bed.pool, [{ workspaceId, role: 'member' }], PASSWORD);
    const login = await call(cfg.API_PUBLIC_URL, 'POST', '/api/auth/login', {
      body: { email: member.email, password: PASSWORD },
    });
    const opened = await call(cfg.API_PUBLIC_URL, 'POST', `/api/portal/erp/sign-in?workspace=${tenant.workspace}`, {
      token: login.body.accessToken,
    });
    expect(opened.status).toBe(200);
    const handoff = new URL(opened.body.url).searchParams.get('handoff_token')!;
    expect(handoff).toBeTruthy();

    // Open ERP lands in the web client: the provider's hand-off, then the ERP exchanges the code at
    // the provider's token endpoint with its client secret
    const b = new Browser({ localDomain: cfg.TENANT_DOMAIN });
    const landed = await b.request(opened.body.url);
    expect(landed.url).toBe(`${erpBaseUrl}/web`);
    expect(await landed.res.text()).toContain(`data-login="${member.email}"`);
    // a second use: refused, and its refusal logged
    expect((await new Browser().request(opened.body.url)).res.status).toBe(400);

    expect(logs.api.text()).toContain('/api/portal/erp/sign-in');
    expect(logs.auth.text()).toContain('/portal-sign-in');
    expect(logs.auth.text()).toContain('/token');
    for (const log of allLogs()) {
      expect(log).not.toContain(handoff);
      expect(log).not.toContain(client.clientSecret);
      expect(log).not.toContain(PASSWORD);
    }
  });

  it("hold no welcome e-mail's activation link", async () => {
    const email = `owner-${randomUUID().slice(0, 8)}@example.test`;
    const { rows } = await bed.pool.query<{ id: string }>(
      `INSERT INTO users (email, name) VALUES ($1, 'Ada Owner') RETURNING id`,
      [email],
    );
    const workspace = (
      await bed.pool.query<{ slug: string }>(
        "INSERT INTO workspaces (slug, name) VALUES ($1, 'Welcome') RETURNING slug",
        [`welcome-${randomUUID().slice(0, 8)}`],
      )
    ).rows[0]!.slug;
    await bed.pool.query(
      `INSERT INTO memberships (user_id, workspace_id, role) SELECT $1, id, 'admin' FROM workspaces WHERE slug = $2`,
      [rows[0]!.id, workspace],
    );
    const sent = await fetch(new URL('/v1/welcome', cfg.NOTIFICATIONS_URL), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': testKeys.notifications,
        'idempotency-key': `welcome:${workspace}:${randomUUID()}`,
      },
      body: JSON.stringify({ email, workspace }),
    });
    expect(sent.status).toBe(200);
    const mails = () => readMailbox(sink.dir).filter((m) => m.to.includes(email));
    await expect.poll(() => mails().length, { timeout: 15_000 }).toBe(1);
    const { token } = linkIn(mails()[0], `${cfg.API_PUBLIC_URL}/w/`);
    const accept = (password: string) =>
      call(cfg.API_PUBLIC_URL, 'POST', '/api/portal/team/invitations/accept', { body: { token, password } });
    expect((await accept('the owner chose this')).status).toBe(200);
    expect((await accept('the owner chose this')).status).not.toBe(200);

    expect(logs.notifications.text()).toContain('/v1/welcome');
    expect(logs.api.text()).toContain('/api/portal/team/invitations/accept');
    for (const log of allLogs()) {
      expect(log).not.toContain(token);
      expect(log).not.toContain('the owner chose this');
    }
  });
});
