/**
 * `npm run bench:banking`: the latency the account API adds in front of the banking service. On
 * throw-away PostgreSQL, Redis and Temporal servers: the bank stand-in, the banking service and
 * the account API, all over real HTTP on loopback. Two requests, each BENCH_N times (default 400)
 * one after the other (direct and proxied alternating), after a warm-up:
 *
 *   adapters  GET /banking/adapters (no bank call)            vs GET /api/banking/adapters
 *   consent   GET /banking/sandbox/consent/:id (PostgreSQL, the bank's consent status)
 *                                                          vs GET /api/banking/sandbox/consent/:id
 *
 * Directly = with the account API's service key and X-Workspace-Id, as the account API calls;
 * through the account API = with a workspace key (banking:read): key check, rate limit, execution
 * log, the service key from the secret store, the proxied call. Prints p50/p99 of each and the
 * difference. (Account reads are not used: the bank's frequencyPerDay would stop them.)
 */
import { rmSync } from 'node:fs';
import { parseConfig } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { createApiKey } from '../../domain/access/api-keys.js';
import { startThrowAwayServers, stopAll, throwAwayDir, freePort } from '../../scripts/local-servers.js';
import { startBankStandIn } from '../../sandbox/bank/server.js';
import { startBanking } from '../../services/banking/server.js';
import { startApi } from '../../api/server.js';

const N = Number(process.env.BENCH_N ?? 400);
const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

async function timed(url: string, headers: Record<string, string>): Promise<number> {
  const t = process.hrtime.bigint();
  const res = await fetch(url, { headers });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return Number(process.hrtime.bigint() - t) / 1e6;
}

/** Direct and proxied calls in alternation, so both see the same machine load (2 shared cores here). */
async function measure(direct: [string, Record<string, string>], proxied: [string, Record<string, string>]) {
  for (let i = 0; i < 50; i++) await Promise.all([timed(...direct), timed(...proxied)]);
  const d: number[] = [];
  const p: number[] = [];
  for (let i = 0; i < N; i++) {
    d.push(await timed(...direct));
    p.push(await timed(...proxied));
  }
  return { d, p };
}

const dir = throwAwayDir('plana-bench-banking-');
try {
  const { pg, redis, temporal } = await startThrowAwayServers(dir);
  const [apiPort, bankingPort] = await Promise.all([freePort(), freePort()]);
  const bank = await startBankStandIn({ bankId: 'sandbox' });
  const cfg = parseConfig({
    DATABASE_URL: pg.url,
    REDIS_URL: redis.url,
    TEMPORAL_ADDRESS: temporal.address,
    LOG_LEVEL: 'silent',
    API_PORT: String(apiPort),
    API_PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    BANKING_PORT: String(bankingPort),
    BANKING_URL: `http://127.0.0.1:${bankingPort}`,
    BANKING_BANKS: `sandbox=${bank.url}`,
    // the bench's one key makes all the calls: a bucket large enough not to be the subject
    RATE_LIMIT_BURST: '100000',
    RATE_LIMIT_PER_SECOND: '100000',
  });
  const pool = createPool(cfg.DATABASE_URL, 4);
  await migrate(pool);
  const store = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, store);
  const ws = await pool.query<{ id: string }>(
    `INSERT INTO workspaces (slug, name) VALUES ('bench', 'Bench') RETURNING id`,
  );
  const user = await pool.query<{ id: string }>(
    `INSERT INTO users (email, name, password_hash) VALUES ('bench@bench.test', 'Bench', 'x') RETURNING id`,
  );
  const key = await createApiKey(pool, {
    workspaceId: ws.rows[0]!.id,
    name: 'bench',
    scopes: ['banking:read'],
    createdBy: user.rows[0]!.id,
    bcryptCost: 4,
  });
  const banking = await startBanking(cfg);
  const api = await startApi(cfg);

  const workspaceKey = { authorization: `Bearer ${key.token}` };
  const serviceKey = {
    'x-api-key': (await store.current('account-api', 'banking')).key,
    'x-workspace-id': ws.rows[0]!.id,
  };
  const created = await fetch(`${cfg.API_PUBLIC_URL}/api/banking/sandbox/consent`, {
    method: 'POST',
    headers: { ...workspaceKey, 'content-type': 'application/json' },
    body: '{}',
  });
  const consent = (await created.json()) as { consentId: string; scaRedirect: string };
  const page = await (await fetch(consent.scaRedirect)).text();
  await fetch(new URL(/action="([^"]+)"/.exec(page)![1]!, bank.url), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'decision=approve',
  });

  console.log(
    `Added latency of the account API in front of the banking service, ${N} sequential calls each (Node ${process.version}):\n`,
  );
  for (const [label, direct, proxied] of [
    ['adapters', `${cfg.BANKING_URL}/banking/adapters`, `${cfg.API_PUBLIC_URL}/api/banking/adapters`],
    [
      'consent ',
      `${cfg.BANKING_URL}/banking/sandbox/consent/${consent.consentId}`,
      `${cfg.API_PUBLIC_URL}/api/banking/sandbox/consent/${consent.consentId}`,
    ],
  ] as const) {
    const { d, p } = await measure([direct, serviceKey], [proxied, workspaceKey]);
    const f = (v: number) => `${v.toFixed(2).padStart(6)} ms`;
    console.log(`  ${label}  directly       p50 ${f(pct(d, 50))}  p99 ${f(pct(d, 99))}`);
    console.log(
      `            via account API p50 ${f(pct(p, 50))}  p99 ${f(pct(p, 99))}   added p50 ${f(pct(p, 50) - pct(d, 50))}  p99 ${f(pct(p, 99) - pct(d, 99))}`,
    );
  }
  await api.close();
  await banking.close();
  await bank.close();
  await pool.end();
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
