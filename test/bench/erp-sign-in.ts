/**
 * `npm run bench:erp-sign-in`: what signing in to a tenant's ERP through the platform's OpenID
 * provider costs, on private throw-away PostgreSQL, Redis and Temporal servers: the auth service
 * (the provider) and the ERP stand-in (Odoo 18 with OCA auth_oidc's flow) in this process, a tenant
 * wired as provisioning wires it (its client, the ERP's provider record, its owner's ERP user).
 *
 * One sign-in is what a browser does from the ERP's login page: GET /web/login, "Sign in with
 * Plana" (the provider's /authorize/), the provider's login (its interaction), back to the ERP's
 * /auth_oauth/signin (the ERP exchanges the code at /token/ with PKCE and checks the ID token with
 * the JWKS) and the ERP's web client. Two cases, alternating so both see the same background load:
 *
 *   1. with a session at the provider already (what "Open ERP" is once the person is signed in);
 *   2. without one: the password is typed at the provider (a bcrypt check at BCRYPT_COST).
 *
 * Prints p50/p99 of each, and the count of failed sign-ins (none expected). BENCH_SIGN_INS (per
 * case) and BENCH_WARM_UP tune it.
 */
import { rmSync } from 'node:fs';
import bcrypt from 'bcrypt';
import { erpApiUserDeps } from '../../domain/erp/admin-session.js';
import {
  ERP_PROVIDER_BUTTON,
  ensureErpSignInProvider,
  syncErpSignInUsers,
  tenantMembers,
} from '../../domain/identity/erp-sign-in.js';
import {
  ensureTenantClient,
  erpRedirectUri,
  oidcProviderIssuer,
  tenantBaseUrl,
} from '../../domain/identity/oidc-clients.js';
import { parseConfig } from '../../lib/config.js';
import { startAuth } from '../../services/auth/server.js';
import { freePort, startThrowAwayServers, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { Browser, linkTo } from '../support/http-browser.js';
import { addBenchTenant, startBenchErp } from './bench-tenant.js';
import { percentile } from './percentile.js';

const SIGN_INS = Number(process.env.BENCH_SIGN_INS ?? 100);
const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 5);
const started = Date.now();
const step = (msg: string) => console.log(`▸ ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
const fmt = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 0.5).toFixed(1)} ms, p99 ${percentile(sorted, 0.99).toFixed(1)} ms (n=${xs.length})`;
};

const dir = throwAwayDir('plana-bench-erp-sign-in-');
let auth: Awaited<ReturnType<typeof startAuth>> | undefined;
try {
  step('starting PostgreSQL, Redis and Temporal');
  const { pg, redis, temporal } = await startThrowAwayServers(dir);
  step('building an ERP template, a tenant database and the ERP stand-in');
  const bench = await startBenchErp(pg);
  const authPort = await freePort();
  const cfg = parseConfig({
    // not production: it refuses the stand-ins and the development secrets this bench runs with
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: pg.url,
    REDIS_URL: redis.url,
    TEMPORAL_ADDRESS: temporal.address,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    ERP_URL: bench.erp.url,
    AUTH_PORT: String(authPort),
    AUTH_URL: `http://127.0.0.1:${authPort}`,
    TENANT_BASE_URL: `http://{host}:${new URL(bench.erp.url).port}`,
  });
  const { workspaceId, host } = await addBenchTenant(cfg, bench.pool, bench.admin);
  const email = 'owner@bench.test';
  const password = 'bench-owner-password';
  const user = await bench.pool.query<{ id: string }>(
    "INSERT INTO users (email, name, password_hash) VALUES ($1, 'Bench Owner', $2) RETURNING id",
    [email, await bcrypt.hash(password, cfg.BCRYPT_COST)],
  );
  await bench.pool.query("INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, 'admin')", [
    user.rows[0]!.id,
    workspaceId,
  ]);

  step('starting the auth service (the OpenID provider); wiring the tenant as provisioning does');
  auth = await startAuth(cfg);
  const base = tenantBaseUrl(cfg, host);
  const client = await ensureTenantClient(bench.pool, cfg.SECRETS_KEY, 'bench', erpRedirectUri(base));
  const deps = erpApiUserDeps(cfg, bench.pool, bench.erp.url);
  const { providerId } = await ensureErpSignInProvider(deps, host, oidcProviderIssuer(cfg), client);
  await syncErpSignInUsers(deps, host, providerId, await tenantMembers(bench.pool, 'bench'));

  /** One sign-in from the ERP's login page to its web client, without an ERP session; the browser keeps its provider session. */
  async function signIn(b: Browser): Promise<number> {
    b.forget(host);
    const t = performance.now();
    const page = await b.request(`${base}/web/login`);
    const link = linkTo(await page.res.text(), ERP_PROVIDER_BUTTON);
    if (!link) throw new Error(`no provider link on ${page.url}`);
    let landed = await b.request(link);
    if (landed.url.startsWith(`${oidcProviderIssuer(cfg)}/interaction/`))
      landed = await b.submit(landed, { email, password });
    if (landed.url !== `${base}/web`) throw new Error(`the sign-in ended at ${landed.url} (${landed.res.status})`);
    const html = await landed.res.text();
    if (!html.includes(`data-login="${email}"`)) throw new Error(`the web client at ${landed.url} is not the owner's`);
    return performance.now() - t;
  }

  const signedIn = new Browser({ localDomain: cfg.TENANT_DOMAIN });
  await signIn(signedIn); // its provider session, kept for case 1
  step(`warming up (${WARM_UP} of each)`);
  for (let i = 0; i < WARM_UP; i++) {
    await signIn(signedIn);
    await signIn(new Browser({ localDomain: cfg.TENANT_DOMAIN }));
  }
  step(`${SIGN_INS} sign-ins of each case, alternating`);
  const withSession: number[] = [];
  const withPassword: number[] = [];
  let failed = 0;
  for (let i = 0; i < SIGN_INS; i++) {
    await signIn(signedIn).then(
      (ms) => withSession.push(ms),
      () => failed++,
    );
    await signIn(new Browser({ localDomain: cfg.TENANT_DOMAIN })).then(
      (ms) => withPassword.push(ms),
      () => failed++,
    );
  }
  console.log(`\nERP sign-in through the platform's OpenID provider (ERP stand-in, auth_oidc's code flow + PKCE):`);
  console.log(`  with a provider session (Open ERP once signed in): ${fmt(withSession)}`);
  console.log(`  password typed at the provider (bcrypt cost ${cfg.BCRYPT_COST}): ${fmt(withPassword)}`);
  console.log(`  failed sign-ins: ${failed}`);
  await bench.close();
} catch (err) {
  console.error(`bench:erp-sign-in failed: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  await auth?.close();
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
  step('done');
}
