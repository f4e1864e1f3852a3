/**
 * The execution log in the log store (a real VictoriaLogs of this file's own, so it can be stopped):
 * the worker's mirror ships PostgreSQL's rows there once each, the ops API and `npm run cli -- logs`
 * read them back, a store that is down changes nothing for the API and loses nothing, and the
 * store's retention drops what is older than its period.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../cli/index.js';
import { ExecutionLog } from '../../domain/access/execution-log.js';
import { shipExecutionLog, startExecutionLogMirror } from '../../domain/access/execution-log-mirror.js';
import { queryLogs } from '../../lib/log-store.js';
import { createLogger } from '../../lib/logger.js';
import { freePort, startVictorialogs, type LogStoreServer } from '../../scripts/local-servers.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { tempDir } from '../support/env.js';
import { testKeys } from '../support/service-keys.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

let api: TestApi;
let store: LogStoreServer;
let storeDir: string;
let storePort: number;
let mirror: { stop(): Promise<void> } | undefined;

const startStore = (retention = '90d', dir = storeDir, port = storePort) => startVictorialogs({ dir, port, retention });

beforeAll(async () => {
  storeDir = tempDir('log-store');
  storePort = await freePort();
  store = await startStore();
  api = await startTestApi({ EXECUTION_LOG_FLUSH_MS: '100', LOG_STORE_URL: store.url });
  process.env.PLANA_API_URL = api.cfg.API_PUBLIC_URL;
  process.env.OPS_API_KEY = testKeys.operator;
});

afterEach(async () => {
  await mirror?.stop();
  mirror = undefined;
});

afterAll(async () => {
  delete process.env.PLANA_API_URL;
  delete process.env.OPS_API_KEY;
  await api?.close();
  await store?.stop();
});

const startMirror = () => {
  mirror = startExecutionLogMirror({
    pool: api.pool,
    storeUrl: store.url,
    intervalMs: 100,
    log: createLogger({ level: 'silent' }),
  });
};

const opsLog = (slug: string, query = '') =>
  call(api.base, 'GET', `/api/ops/workspaces/${slug}/execution-log${query}`, {
    headers: { 'x-api-key': testKeys.operator },
  });

/** Every line the store holds for the workspace, duplicates included (what a reader must not show). */
const rawLines = (workspaceId: string) =>
  queryLogs(store.url, `{log="execution",workspace_id="${workspaceId}"} _time:1d`, 10_000);

/** Waits until the ops API shows `count` calls of the workspace; answers them. */
async function untilStored(slug: string, count: number, timeoutMs = 20_000) {
  let items: { requestId: string; status: number }[] = [];
  await vi.waitFor(
    async () => {
      const res = await opsLog(slug, '?since=1h&limit=1000');
      expect(res.status).toBe(200);
      items = res.body.items;
      expect(items).toHaveLength(count);
    },
    { timeout: timeoutMs, interval: 250 },
  );
  return items;
}

async function workspaceWithKey() {
  const { workspace, accessToken } = await adminOfNewWorkspace(api.base, api.pool);
  const key = await createKey(api.base, accessToken, { name: 'k', scopes: ['banking:read'] });
  const self = () => call(api.base, 'GET', '/api/portal/apikeys/self', { token: key.token });
  return { workspace, key, self };
}

/** Runs `npm run cli -- <args>`; answers its exit code and what it printed. */
async function cli(args: string[]) {
  let out = '';
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void (out += `${a.join(' ')}\n`));
  try {
    return { code: await runCli(args), out };
  } finally {
    log.mockRestore();
  }
}

describe('the execution log in the log store', () => {
  it('holds every call once, with the key prefix and never the token, newest first', async () => {
    const { workspace, key, self } = await workspaceWithKey();
    const answers = [await self(), await self()];
    const refused = await call(api.base, 'GET', `/api/portal/odoo/${workspace.slug}/kpis`, { token: key.token });
    expect(refused.status).toBe(403);
    startMirror();

    const items = await untilStored(workspace.slug, 3);
    expect(items.map((i) => i.requestId)).toEqual(
      [...answers, refused].map((r) => r.headers.get('x-request-id')).reverse(),
    );
    expect(items[0]).toMatchObject({
      keyPrefix: key.prefix,
      method: 'GET',
      route: '/api/portal/odoo/:slug/kpis',
      status: 403,
    });
    expect(await rawLines(workspace.id)).toHaveLength(3);
    const raw = JSON.stringify(await rawLines(workspace.id));
    expect(raw).toContain(key.prefix);
    expect(raw).not.toContain(key.token.slice(key.prefix.length));

    // filters: status and route
    expect((await opsLog(workspace.slug, '?status=403')).body.items).toHaveLength(1);
    expect((await opsLog(workspace.slug, '?route=/apikeys/')).body.items).toHaveLength(2);
  });

  it('sends each row once, in the order of the numbers, not of their text (9 before 10)', async () => {
    const { workspace } = await workspaceWithKey();
    // two rows of one transaction whose ids sort the other way as text
    await api.pool.query(
      `INSERT INTO execution_log (id, occurred_at, workspace_id, key_prefix, method, route, status, latency_ms, request_id)
         OVERRIDING SYSTEM VALUE
       SELECT n, now(), $1, 'ws_live_ORDER', 'GET', '/x', 200, 1, 'order-' || n FROM unnest(ARRAY[9, 10]) AS n`,
      [workspace.id],
    );
    await shipExecutionLog(api.pool, store.url);
    await shipExecutionLog(api.pool, store.url);
    await vi.waitFor(async () => expect(await rawLines(workspace.id)).toHaveLength(2), { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await rawLines(workspace.id)).toHaveLength(2);
  });

  it('shows a batch the mirror sent twice (a crash between its POST and its commit) once', async () => {
    const { workspace, self } = await workspaceWithKey();
    await self();
    await self();
    await vi.waitFor(
      async () =>
        expect(
          (await api.pool.query('SELECT 1 FROM execution_log WHERE workspace_id = $1', [workspace.id])).rowCount,
        ).toBe(2),
      { timeout: 5_000 },
    );
    const before = await api.pool.query('SELECT xid, id FROM execution_log_mirror_cursor');
    await shipExecutionLog(api.pool, store.url);
    // as if the commit never happened: the cursor back where it was, and the same rows sent again
    await api.pool.query('UPDATE execution_log_mirror_cursor SET xid = $1, id = $2', [
      before.rows[0].xid,
      before.rows[0].id,
    ]);
    await shipExecutionLog(api.pool, store.url);

    await vi.waitFor(async () => expect(await rawLines(workspace.id)).toHaveLength(4), { timeout: 10_000 });
    await untilStored(workspace.slug, 2);
  });

  it('the store down: the API answers as before and the readers say so; back: every call arrives, once', async () => {
    const { workspace, self } = await workspaceWithKey();
    startMirror();
    await self();
    await untilStored(workspace.slug, 1);

    await store.stop();
    const during = [];
    for (let i = 0; i < 30; i++) during.push(await self());
    expect(during.map((r) => r.status)).toEqual(Array(30).fill(200));
    await vi.waitFor(
      async () =>
        expect(
          (await api.pool.query('SELECT 1 FROM execution_log WHERE workspace_id = $1', [workspace.id])).rowCount,
        ).toBe(31),
      { timeout: 5_000 },
    );
    const down = await opsLog(workspace.slug);
    expect(down.status).toBe(503);
    expect(down.body.detail).toMatch(/log store did not answer.*No call is lost/);
    const cliDown = await cli(['logs', workspace.slug]);
    expect(cliDown.code).toBe(1);

    store = await startStore();
    const items = await untilStored(workspace.slug, 31, 90_000);
    expect(new Set(items.map((i) => i.requestId)).size).toBe(31);
  }, 120_000);

  it('`npm run cli -- logs` prints the calls as a table, or as JSON', async () => {
    const { workspace, key, self } = await workspaceWithKey();
    const answer = await self();
    startMirror();
    await untilStored(workspace.slug, 1);

    const table = await cli(['logs', workspace.slug, '--since', '1h']);
    expect(table.code).toBe(0);
    const [head, row] = table.out.trim().split('\n');
    expect(head).toMatch(/TIME\s+KEY\s+METHOD\s+ROUTE\s+STATUS\s+LATENCY\s+REQUEST ID/);
    expect(row).toContain(key.prefix);
    expect(row).toContain('/api/portal/apikeys/self');
    expect(row).toContain(answer.headers.get('x-request-id'));
    expect(row).toMatch(/\s\d+\.\d ms\s/);

    const json = await cli(['logs', workspace.slug, '--status', '200', '-o', 'json']);
    expect(JSON.parse(json.out)).toEqual([
      expect.objectContaining({ keyPrefix: key.prefix, status: 200, requestId: answer.headers.get('x-request-id') }),
    ]);
    expect((await cli(['logs', workspace.slug, '--status', '500'])).out).toContain('No calls');
  });

  it('keeps its retention: a store restarted with a 1-day period drops the calls older than a day', async () => {
    const { workspace } = await workspaceWithKey();
    const now = Date.now();
    const threeDaysAgo = now - 3 * 86_400_000;
    await api.pool.query('SELECT execution_log_ensure_partitions($1::date, 1)', [
      new Date(threeDaysAgo).toISOString().slice(0, 10),
    ]);
    const log = new ExecutionLog({ pool: api.pool, log: api.app.log, flushMs: 60_000, partitionsAhead: 1 });
    const call = (occurredAt: number, requestId: string) =>
      log.record({
        occurredAt,
        workspaceId: workspace.id,
        keyPrefix: 'ws_live_RETAIN',
        method: 'GET',
        route: '/api/portal/apikeys/self',
        status: 200,
        latencyMs: 1,
        requestId,
      });
    call(threeDaysAgo, 'old');
    call(now, 'new');
    await log.close();
    await shipExecutionLog(api.pool, store.url);
    const requestIds = async () =>
      (await opsLog(workspace.slug, '?since=7d')).body.items.map((i: { requestId: string }) => i.requestId);
    await vi.waitFor(async () => expect(await requestIds()).toEqual(['new', 'old']), { timeout: 10_000 });

    await store.stop();
    store = await startStore('1d');
    expect(await requestIds()).toEqual(['new']);
    // and a call older than the period is refused on the way in
    const older = new ExecutionLog({ pool: api.pool, log: api.app.log, flushMs: 60_000, partitionsAhead: 1 });
    older.record({
      occurredAt: threeDaysAgo + 1,
      workspaceId: workspace.id,
      keyPrefix: 'ws_live_RETAIN',
      method: 'GET',
      route: '/x',
      status: 200,
      latencyMs: 1,
      requestId: 'late',
    });
    await older.close();
    await shipExecutionLog(api.pool, store.url);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await requestIds()).toEqual(['new']);

    await store.stop();
    store = await startStore();
  }, 60_000);
});
