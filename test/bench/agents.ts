/**
 * `npm run bench:agents` (about a minute): what the agents path costs. Starts its own PostgreSQL,
 * Redis and Temporal dev server in a throw-away folder, the ERP stand-in with one tenant, and the
 * account API, the agents service, the data service and the LLM stand-in (no pause between chunks)
 * each as its own process, then prints:
 *
 *   1. the latency the account API adds in front of the agents service: the same chat call
 *      (no tools) direct to the agents service and through the API, interleaved, p50/p99 of each
 *      and of the difference;
 *   2. SSE time to first chunk (the first answer delta) through the API and direct, and to the
 *      first byte through the API;
 *   3. agent calls/s the agents service sustains with the stand-in model (autocannon, direct),
 *      without tools (one model call) and with one tool (two model calls + the data service + ERP).
 *
 * The workspace gets a limit override (granted by arrangement) so the per-minute agent limit does
 * not stop the run. BENCH_N (sequential calls, default 150), BENCH_DURATION (s, default 5) and
 * BENCH_CONNECTIONS (default 16) tune it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { parseConfig } from '../../lib/config.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { createApiKey } from '../../domain/access/api-keys.js';
import { setLimitOverride } from '../../domain/access/workspace-limits.js';
import { WorkspaceGrants } from '../../domain/agents/workspace-grant.js';
import { addBenchTenant, startBenchErp } from './bench-tenant.js';
import { freePort, startThrowAwayServers, stopAll, throwAwayDir } from '../../scripts/local-servers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const N = Number(process.env.BENCH_N ?? 150);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const started = Date.now();
const step = (msg: string) => console.log(`▸ ${msg} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
const pct = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const fmt = (values: number[]) =>
  `p50 ${pct(values, 50).toFixed(2)} ms, p99 ${pct(values, 99).toFixed(2)} ms (n=${values.length})`;

const dir = throwAwayDir('plana-bench-agents-');
const children: ChildProcess[] = [];

async function startProcess(script: string, env: Record<string, string>, probe: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, script)], {
    cwd: root,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(probe).then(
        (r) => r.status < 500,
        () => false,
      )
    )
      return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${script} did not start`);
}

try {
  step('starting PostgreSQL, Redis and Temporal');
  const { pg, redis, temporal } = await startThrowAwayServers(dir);
  const [apiPort, agentsPort, dataPort, llmPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  step('building an ERP template, a tenant database and the ERP stand-in');
  const bench = await startBenchErp(pg);
  const { pool, erp } = bench;
  const env: Record<string, string> = {
    // not production: it refuses the stand-ins and the development secrets this bench runs with
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: pg.url,
    REDIS_URL: redis.url,
    TEMPORAL_ADDRESS: temporal.address,
    ERP_DATABASE_URL: pg.urlFor('postgres'),
    ERP_URL: erp.url,
    API_PORT: String(apiPort),
    API_PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    AGENTS_PORT: String(agentsPort),
    AGENTS_URL: `http://127.0.0.1:${agentsPort}`,
    DATA_PORT: String(dataPort),
    DATA_URL: `http://127.0.0.1:${dataPort}`,
    LLM_STANDIN_PORT: String(llmPort),
    LLM_STANDIN_CHUNK_DELAY_MS: '0',
    LLM_URL: `http://127.0.0.1:${llmPort}/v1`,
  };
  const cfg = parseConfig(env);
  const secrets = new PgSecretStore(pool, cfg.SECRETS_KEY);
  await ensureServiceKeys(pool, secrets);
  const { workspaceId } = await addBenchTenant(cfg, pool, bench.admin);
  await setLimitOverride(pool, workspaceId, { burst: 1_000_000, perSecond: 100_000, agentPerMinute: 1_000_000 });
  const key = (
    await createApiKey(pool, {
      workspaceId,
      name: 'bench',
      scopes: ['agents:invoke'],
      createdBy: null as unknown as string,
      bcryptCost: 4,
    })
  ).token;
  const accountKey = (await secrets.current('account-api', 'agents')).key;

  step('starting the LLM stand-in, the data service, the agents service and the account API (one process each)');
  await startProcess('sandbox/llm/server.ts', env, `http://127.0.0.1:${llmPort}/v1/models`);
  await startProcess('services/data/server.ts', env, `${env.DATA_URL}/healthz`);
  await startProcess('services/agents/server.ts', env, `${env.AGENTS_URL}/healthz`);
  await startProcess('api/server.ts', env, `${env.API_PUBLIC_URL}/healthz`);

  const grants = new WorkspaceGrants(cfg.SECRETS_KEY);
  const directHeaders = () => ({
    'x-api-key': accountKey,
    'x-workspace-id': workspaceId,
    'x-workspace-grant': grants.issue(workspaceId),
    'content-type': 'application/json',
  });
  const apiHeaders = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const direct = (p: string) => `${env.AGENTS_URL}/agents/finance/${p}`;
  const viaApi = (p: string) => `${env.API_PUBLIC_URL}/api/agents/finance/${p}`;
  const body = (message: string) => JSON.stringify({ message });

  async function timed(url: string, headers: Record<string, string>, message: string) {
    const t = performance.now();
    const res = await fetch(url, { method: 'POST', headers, body: body(message) });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
    return performance.now() - t;
  }

  /** Time to the first byte and to the first answer delta of a stream. */
  async function firstChunk(url: string, headers: Record<string, string>) {
    const t = performance.now();
    const res = await fetch(url, { method: 'POST', headers, body: body('What is our cash balance?') });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    let firstByte: number | undefined;
    let firstDelta: number | undefined;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      firstByte ??= performance.now() - t;
      text += decoder.decode(value, { stream: true });
      if (firstDelta === undefined && text.includes('event: delta')) firstDelta = performance.now() - t;
    }
    return { firstByte: firstByte!, firstDelta: firstDelta! };
  }

  step(`warming up, then ${N} chat calls (no tools) each way, interleaved`);
  for (let i = 0; i < 20; i++) {
    await timed(direct('chat'), directHeaders(), 'hello');
    await timed(viaApi('chat'), apiHeaders, 'hello');
  }
  const d: number[] = [];
  const a: number[] = [];
  for (let i = 0; i < N; i++) {
    d.push(await timed(direct('chat'), directHeaders(), 'hello'));
    a.push(await timed(viaApi('chat'), apiHeaders, 'hello'));
  }

  step('SSE: time to the first answer chunk (one tool round before it), 40 each way');
  const sseApi: { firstByte: number; firstDelta: number }[] = [];
  const sseDirect: { firstByte: number; firstDelta: number }[] = [];
  for (let i = 0; i < 40; i++) {
    sseDirect.push(await firstChunk(direct('chat/stream'), directHeaders()));
    sseApi.push(await firstChunk(viaApi('chat/stream'), apiHeaders));
  }

  const load = (title: string, message: string) =>
    new Promise<autocannon.Result>((resolve, reject) => {
      autocannon(
        {
          title,
          url: direct('chat'),
          method: 'POST',
          headers: directHeaders(),
          body: body(message),
          connections: CONNECTIONS,
          duration: DURATION,
        },
        (err, r) => (err ? reject(err) : resolve(r)),
      );
    });
  step(`agent calls/s of the agents service (direct, ${CONNECTIONS} connections, ${DURATION} s each)`);
  const noTool = await load('no tool', 'hello');
  const oneTool = await load('one tool', 'What is our cash balance?');
  const executions = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM agent_executions')).rows[0]!.n;

  console.log(`
Agents bench (${new Date().toISOString()}, ${process.env.BENCH_NOTE ?? 'this machine'})

  chat, no tools, direct to the agents service   ${fmt(d)}
  chat, no tools, through the account API        ${fmt(a)}
  added by the account API                       p50 ${(pct(a, 50) - pct(d, 50)).toFixed(2)} ms, p99 ${(pct(a, 99) - pct(d, 99)).toFixed(2)} ms

  SSE first answer chunk, direct                 ${fmt(sseDirect.map((s) => s.firstDelta))}
  SSE first answer chunk, through the API        ${fmt(sseApi.map((s) => s.firstDelta))}
  SSE first byte, through the API                ${fmt(sseApi.map((s) => s.firstByte))}

  agent calls/s, no tool (1 model call)          ${noTool.requests.average.toFixed(0)}/s, p50 ${noTool.latency.p50} ms, p99 ${noTool.latency.p99} ms, non-2xx ${noTool.non2xx}, errors ${noTool.errors}
  agent calls/s, one tool (2 model calls + data) ${oneTool.requests.average.toFixed(0)}/s, p50 ${oneTool.latency.p50} ms, p99 ${oneTool.latency.p99} ms, non-2xx ${oneTool.non2xx}, errors ${oneTool.errors}
  executions recorded                            ${executions}
`);
  await bench.close();
} finally {
  for (const c of children) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
