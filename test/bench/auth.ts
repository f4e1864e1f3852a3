/**
 * `npm run bench:auth`: what workspace-key authentication costs. Starts its own PostgreSQL, Redis,
 * Temporal dev server and ERP stand-in in a throw-away folder, runs the account API as its own
 * process (logging at info, like production, to /dev/null), and loads it with autocannon:
 *
 * in alternating rounds (so both see the same background load):
 *
 *   1. GET /healthz                                — unauthenticated, trivial;
 *   2. GET /api/portal/odoo/<slug>/kpis            — a workspace key (verified-token cache warm),
 *      revocation feed, token bucket (leased tokens), scope check, execution log, and the
 *      dashboard figures from the dashboards' cache;
 *   3. GET /api/portal/apikeys/self                — the key path alone.
 *
 * Prints, per route, requests/s, p50/p99 latency, the API process's CPU time per request and its
 * kernel part (from /proc; the requests as the API counted them in its Prometheus metrics, plana_http_requests_total
 * on its METRICS_PORT, with the route template it counted them under) and the size of an answer; the ratio of the dashboard call to the trivial route by
 * throughput (target ≥ 60 %) and by requests per API CPU-second, each the median of the rounds;
 * plus the bcrypt cost and the latency of a key's first call in a process against a warm one.
 * The workspace gets a rate-limit override (granted by arrangement) so the bucket does not throttle
 * the run. BENCH_ROUNDS, BENCH_DURATION (s), BENCH_WARM_UP (s), BENCH_CONNECTIONS,
 * BENCH_API_NODE_OPTIONS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") and BENCH_ONLY (routes by a part
 * of their name, comma-separated: `kpis` alone to profile it, `healthz,kpis` for the ratio) tune it.
 * The ratio of all rounds pooled is printed too: one run's rounds vary by ±15 points on a shared machine.
 * BENCH_API_STDOUT=<file> sends the API's standard output (its log lines, and V8's figures per garbage
 * collection with BENCH_API_NODE_OPTIONS=--trace-gc-nvp) to that file instead of /dev/null.
 *
 * BENCH_RATE=<requests/s> loads at that steady rate instead of as fast as the API answers: the
 * latency callers see at a load the API carries, where the saturated rounds measure its capacity.
 *
 * BENCH_VARIANTS compares configurations in one window: each `;`-separated list of VAR=value pairs
 * starts one more API process with those variables added (e.g. `OTEL_TRACES_EXPORTER=zipkin
 * OTEL_TRACES_SAMPLER_ARG=1;LOG_STORE_URL=http://127.0.0.1:9428`), and its routes join the rounds,
 * so every configuration sees the same background load. Only one process is loaded at a time.
 */
import { spawn } from 'node:child_process';
import { openSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import bcrypt from 'bcrypt';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { parseConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { startConfiguredMirror } from '../../worker/index.js';
import { BENCH_SLUG, addBenchTenant, startBenchErp } from './bench-tenant.js';
import { samples, scrape } from '../support/metrics-scrape.js';
import { freePort, startThrowAwayServers, stopAll, throwAwayDir } from '../../scripts/local-servers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const WARM_UP = Number(process.env.BENCH_WARM_UP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean);
/** Requests per second over all connections (a steady load, as callers make it); unset: as fast as the API answers. */
const RATE = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;
const started = Date.now();
const step = (msg: string) => console.log(`▸ ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

const dir = throwAwayDir('plana-bench-auth-');
const apiProcesses: ReturnType<typeof spawn>[] = [];

async function json(url: string, init: RequestInit = {}) {
  const res = await fetch(url, init);
  const body = await res.json();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

async function waitForApi(url: string) {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the API did not start');
}

/** `A=1 B=2` → { A: '1', B: '2' } (one BENCH_VARIANTS configuration). */
function variantEnv(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .trim()
      .split(/\s+/)
      .map((pair) => {
        const at = pair.indexOf('=');
        if (at < 1) throw new Error(`BENCH_VARIANTS: ${pair} is not VAR=value`);
        return [pair.slice(0, at), pair.slice(at + 1)];
      }),
  );
}

/** Ports of one more API process. */
async function apiPorts(): Promise<Record<string, string>> {
  const port = await freePort();
  return { API_PORT: String(port), API_PUBLIC_URL: `http://127.0.0.1:${port}`, METRICS_PORT: String(await freePort()) };
}

/** Where the API's standard output (its log lines) goes: BENCH_API_STDOUT's file, else /dev/null. */
function apiStdout(): 'ignore' | number {
  const file = process.env.BENCH_API_STDOUT;
  return file ? openSync(file, 'w') : 'ignore';
}

/** CPU seconds an API process used so far, from /proc (Linux): in its own code (user) and in the kernel (system). */
function apiCpuSeconds(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 }; // utime, stime in clock ticks (USER_HZ = 100)
}

interface Round {
  result: autocannon.Result;
  /** API CPU seconds spent in the round (user + system), and the system part (the kernel: sockets, writes). */
  cpu: number;
  system: number;
  /** Requests the API answered 200 in the round, and the route template it counted them under. */
  served: number;
  route: string;
}

/** plana_http_requests_total of the account API answered 200, by route template. */
function answeredByRoute(metrics: string): Map<string, number> {
  const byRoute = new Map<string, number>();
  for (const { labels, value } of samples(metrics, 'plana_http_requests_total'))
    if (labels.service === 'account-api' && labels.status === '200')
      byRoute.set(labels.route!, (byRoute.get(labels.route!) ?? 0) + value);
  return byRoute;
}

/** The route whose count grew most between two scrapes (the one loaded in the round), and by how much. */
function busiestRoute(before: Map<string, number>, after: Map<string, number>): { route: string; served: number } {
  let best = { route: '(none)', served: 0 };
  for (const [route, n] of after) {
    const served = n - (before.get(route) ?? 0);
    if (served > best.served) best = { route, served };
  }
  return best;
}

function load(
  title: string,
  url: string,
  headers: Record<string, string>,
  duration: number,
): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ title, url, headers, connections: CONNECTIONS, duration, overallRate: RATE }, (err, result) =>
      err ? reject(err) : resolve(result),
    );
  });
}

try {
  step('starting PostgreSQL, Redis and Temporal');
  const { pg, redis, temporal } = await startThrowAwayServers(dir);
  const apiPort = await freePort();
  const metricsPort = await freePort();
  const env = {
    // not production: it refuses the stand-ins and the development secrets this bench runs with
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATABASE_URL: pg.url,
    REDIS_URL: redis.url,
    TEMPORAL_ADDRESS: temporal.address,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    API_PORT: String(apiPort),
    API_PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    METRICS_PORT: String(metricsPort),
    // tracing on for a run with it (docs/operators.md#tracing): e.g. OTEL_TRACES_EXPORTER=zipkin
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('OTEL_'))),
    // the log store for a run with it: the API ships its lines there, and this process runs the
    // execution log's mirror as the worker would (docs/operators.md, Log store)
    ...(process.env.LOG_STORE_URL ? { LOG_STORE_URL: process.env.LOG_STORE_URL } : {}),
  };
  step('building an ERP template, a tenant database and the ERP stand-in');
  const bench = await startBenchErp(pg);
  const { pool, erp } = bench;
  const cfg = parseConfig({ ...env, ERP_URL: erp.url });
  // first start: the platform's service keys (registry + secret store); the bench calls ops as the operator
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, secrets);
  const opsKey = (await secrets.current('operator', 'account-api')).key;
  const slug = BENCH_SLUG;
  const { workspaceId } = await addBenchTenant(cfg, pool, bench.admin);
  const password = 'bench-admin-password';
  const user = await pool.query<{ id: string }>(
    "INSERT INTO users (email, name, password_hash) VALUES ('admin@bench.test', 'Bench Admin', $1) RETURNING id",
    [await bcrypt.hash(password, cfg.BCRYPT_COST)],
  );
  await pool.query("INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, 'admin')", [
    user.rows[0]!.id,
    workspaceId,
  ]);

  // the configurations compared in one window: this run's own, then BENCH_VARIANTS' (header)
  const variants = [
    {},
    ...(process.env.BENCH_VARIANTS ?? '')
      .split(';')
      .filter((v) => v.trim())
      .map(variantEnv),
  ];
  const mirrors = variants.map((extra) =>
    startConfiguredMirror(parseConfig({ ...env, ...extra, ERP_URL: erp.url }), pool, createLogger({ level: 'warn' })),
  );

  step(
    `starting the account API (its own process${variants.length > 1 ? `, one per configuration: ${variants.length}` : ''})`,
  );
  const apis = [];
  for (const extra of variants) apis.push(await startApi(apis.length === 0 ? {} : { ...extra, ...(await apiPorts()) }));
  async function startApi(extra: Record<string, string>) {
    const apiEnv: Record<string, string> = { ...env, ERP_URL: erp.url, ...extra };
    // BENCH_API_NODE_OPTIONS: e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile the API process
    const nodeOptions = (process.env.BENCH_API_NODE_OPTIONS ?? '').split(' ').filter(Boolean);
    const child = spawn(process.execPath, [...nodeOptions, '--import', 'tsx', path.join(root, 'api/server.ts')], {
      cwd: root,
      env: { PATH: process.env.PATH, ...apiEnv },
      stdio: ['ignore', apiStdout(), 'inherit'],
    });
    apiProcesses.push(child);
    await waitForApi(apiEnv.API_PUBLIC_URL!);
    const label = Object.entries(extra)
      .filter(([k]) => !['API_PORT', 'API_PUBLIC_URL', 'METRICS_PORT'].includes(k))
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    return {
      pid: child.pid!,
      base: apiEnv.API_PUBLIC_URL!,
      metricsUrl: `http://127.0.0.1:${apiEnv.METRICS_PORT}/metrics`,
      label,
    };
  }
  const base = cfg.API_PUBLIC_URL;

  const login = await json(`${base}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@bench.test', password }),
  });
  const key = await json(`${base}/api/portal/apikeys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${login.accessToken}` },
    body: JSON.stringify({ name: 'bench' }),
  });
  await json(`${base}/api/ops/workspaces/${slug}/rate-limits`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'x-api-key': opsKey },
    body: JSON.stringify({ burst: 1_000_000, perSecond: 1_000_000, agentPerMinute: 1_000 }),
  });
  const auth = { authorization: `Bearer ${key.token}` };

  // a key's first call in this process pays for bcrypt; the next ones hit the verified-token cache
  const timeCall = async (url: string) => {
    const t = performance.now();
    const res = await fetch(url, { headers: auth });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`${url}: ${res.status}`);
    return performance.now() - t;
  };
  const selfUrl = `${base}/api/portal/apikeys/self`;
  const first = await timeCall(selfUrl);
  const warm: number[] = [];
  for (let i = 0; i < 20; i++) warm.push(await timeCall(selfUrl));
  warm.sort((a, b) => a - b);
  const kpisUrl = `${base}/api/portal/odoo/${slug}/kpis`;
  await timeCall(kpisUrl); // fills the dashboard cache

  const allRoutes = apis.flatMap((api) => {
    const tag = api.label ? ` [${api.label}]` : '';
    return [
      { name: `GET /healthz (no auth)${tag}`, url: `${api.base}/healthz`, headers: {}, api },
      {
        name: `GET /api/portal/odoo/${slug}/kpis (ws_live_ key)${tag}`,
        url: `${api.base}/api/portal/odoo/${slug}/kpis`,
        headers: auth,
        api,
      },
      {
        name: `GET /api/portal/apikeys/self (ws_live_ key)${tag}`,
        url: `${api.base}/api/portal/apikeys/self`,
        headers: auth,
        api,
      },
    ];
  });
  // BENCH_ONLY: load only the routes whose name contains one of the texts, e.g. one to profile it by itself
  const routes = ONLY ? allRoutes.filter((r) => ONLY.some((part) => r.name.includes(part))) : allRoutes;
  if (routes.length === 0) throw new Error(`BENCH_ONLY=${ONLY} names none of the routes`);
  // the ratios need the trivial route (first) and the dashboard call
  const dashboard = routes[0] === allRoutes[0] ? routes.indexOf(allRoutes[1]!) : -1;
  // each process's key cache and dashboard cache warm (a key's first call in a process pays for bcrypt)
  for (const api of apis.slice(1)) await timeCall(`${api.base}/api/portal/odoo/${slug}/kpis`);
  step(`warming up, then ${ROUNDS} alternating rounds of ${DURATION} s per route with ${CONNECTIONS} connections`);
  for (const r of routes) await load(`warm-up ${r.name}`, r.url, r.headers, WARM_UP);
  // alternate short rounds so that every route sees the same background load on a shared machine;
  // each round also notes the CPU time the API process spent on it, and the requests the API
  // answered 200 in it by its own metrics (scraped outside the CPU window)
  const runs = routes.map(() => [] as Round[]);
  for (let i = 0; i < ROUNDS; i++) {
    for (const [j, r] of routes.entries()) {
      const before = answeredByRoute(await scrape(r.api.metricsUrl));
      const cpuBefore = apiCpuSeconds(r.api.pid);
      const result = await load(r.name, r.url, r.headers, DURATION);
      const cpuAfter = apiCpuSeconds(r.api.pid);
      const system = cpuAfter.system - cpuBefore.system;
      const cpu = cpuAfter.user - cpuBefore.user + system;
      runs[j]!.push({ result, cpu, system, ...busiestRoute(before, answeredByRoute(await scrape(r.api.metricsUrl))) });
    }
  }
  const bad = runs.flat().reduce((n, { result }) => n + result.non2xx + result.errors, 0);
  if (bad > 0) throw new Error(`the runs had ${bad} non-2xx answers or errors`);
  const median = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return sorted.length % 2
      ? sorted[(sorted.length - 1) / 2]!
      : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  };
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const cpuPerRequest = (round: Round) => round.cpu / round.served;
  // each round against the trivial route's round of the same turn; the median, so that a burst of
  // background load on a shared machine hits one round, not the figure
  const throughputRatios = (j: number) => runs[j]!.map((round, i) => round.served / runs[0]![i]!.served);
  const capacityRatios = (j: number) => runs[j]!.map((round, i) => cpuPerRequest(runs[0]![i]!) / cpuPerRequest(round));
  const lines = routes.map((r, j) => {
    const rounds = runs[j]!;
    const seconds = rounds.reduce((n, { result }) => n + result.duration, 0);
    const rps = rounds.reduce((n, { served }) => n + served, 0) / seconds;
    const p50 = Math.max(...rounds.map(({ result }) => result.latency.p50));
    const p99 = Math.max(...rounds.map(({ result }) => result.latency.p99));
    const busy = rounds.reduce((n, { cpu }) => n + cpu, 0) / seconds;
    const costUs = median(rounds.map(cpuPerRequest)) * 1e6;
    const systemUs = median(rounds.map((round) => round.system / round.served)) * 1e6;
    const bytes =
      rounds.reduce((n, { result }) => n + result.throughput.total, 0) /
      rounds.reduce((n, { result }) => n + result.requests.total, 0);
    const figures = `${rps.toFixed(0).padStart(6)} req/s  p50 ${String(p50).padStart(3)} ms  p99 ${String(p99).padStart(3)} ms  API CPU ${costUs.toFixed(0).padStart(3)} µs/req (kernel ${systemUs.toFixed(0)}; busy ${pct(busy)}), ${bytes.toFixed(0)} B/answer`;
    const ratios = throughputRatios(j);
    const ratio =
      j === 0 || dashboard < 0
        ? ''
        : `  ratio ${pct(median(ratios))} (rounds ${[...ratios]
            .sort((a, b) => a - b)
            .map((x) => (x * 100).toFixed(0))
            .join('/')})`;
    const counted = `      counted by the API as ${[...new Set(rounds.map((x) => x.route))].join(', ')}: ${rounds.reduce((n, x) => n + x.served, 0)} answered 200 (autocannon: ${rounds.reduce((n, { result }) => n + result['2xx'], 0)})`;
    return `  ${r.name}\n    ${figures}${ratio}\n${counted}`;
  });
  const dashboardRatio = dashboard < 0 ? NaN : median(throughputRatios(dashboard));
  const dashboardCapacity = dashboard < 0 ? NaN : median(capacityRatios(dashboard));
  const pooledCost = (j: number) =>
    runs[j]!.reduce((n, r) => n + r.cpu, 0) / runs[j]!.reduce((n, r) => n + r.served, 0);
  const pooledCapacity = dashboard < 0 ? NaN : pooledCost(0) / pooledCost(dashboard);
  const rounds = (xs: number[]) =>
    [...xs]
      .sort((a, b) => a - b)
      .map((x) => (x * 100).toFixed(0))
      .join('/');
  const summary =
    dashboard < 0
      ? `  BENCH_ONLY=${ONLY}: no ratio`
      : `  key-authenticated dashboard call / trivial route (median of the rounds):
    throughput ${pct(dashboardRatio)}   target ≥ 60 %: ${dashboardRatio >= 0.6 ? 'OK' : 'BELOW TARGET'}
    requests per API CPU-second ${pct(dashboardCapacity)} (rounds ${rounds(capacityRatios(dashboard))}; what one API core sustains, whatever else the machine runs)
    requests per API CPU-second, all rounds pooled ${pct(pooledCapacity)} (${(pooledCost(0) * 1e6).toFixed(1)} / ${(pooledCost(dashboard) * 1e6).toFixed(1)} µs per request)`;

  console.log(`
bench:auth — requests as counted by the API's /metrics (plana_http_requests_total, status 200), load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}
  ${CONNECTIONS} connections${RATE ? `, ${RATE} requests/s` : ''}, ${ROUNDS} × ${DURATION} s per route (alternating), API in its own process, log level info
${lines.join('\n')}
${summary}

  bcrypt cost ${cfg.BCRYPT_COST}: a key's first call in a process ${first.toFixed(1)} ms (bcrypt), then p50 ${warm[10]!.toFixed(1)} ms (cache)
  total ${((Date.now() - started) / 1000).toFixed(1)} s`);

  for (const mirror of mirrors) await mirror?.stop();
  await bench.close();
} catch (err) {
  console.error(`bench:auth failed: ${(err as Error).message}`);
  process.exitCode = 1;
} finally {
  for (const child of apiProcesses.filter((c) => c.exitCode === null)) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
