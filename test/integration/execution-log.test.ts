/**
 * The execution log: every call made with a workspace key lands in the day partition of
 * `execution_log` (real PostgreSQL) and is readable by the workspace's admins with pagination;
 * retention drops whole partitions past 90 days.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../lib/db.js';
import { ExecutionLog } from '../../domain/access/execution-log.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';
import { testKeys } from '../support/service-keys.js';

let pool: Pool;
let api: TestApi;
let base: string;

beforeAll(async () => {
  api = await startTestApi({ EXECUTION_LOG_FLUSH_MS: '100' });
  ({ pool, base } = api);
});

afterAll(() => api?.close());

const readLog = (accessToken: string, query = '') =>
  call(base, 'GET', `/api/portal/execution-log${query}`, { token: accessToken });

describe('GET /api/portal/execution-log', () => {
  it("records every call made with the workspace's keys: time, key prefix, method, route, status, latency", async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken, { name: 'k', scopes: ['banking:read'] });
    const started = Date.now();
    expect((await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token })).status).toBe(200);
    expect((await call(base, 'GET', `/api/portal/odoo/${workspace.slug}/kpis`, { token: key.token })).status).toBe(403);

    const res = await readLog(accessToken);
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(2);
    const [newest, oldest] = res.body.items;
    expect(oldest).toMatchObject({
      keyPrefix: key.prefix,
      method: 'GET',
      route: '/api/portal/apikeys/self',
      status: 200,
    });
    expect(newest).toMatchObject({
      keyPrefix: key.prefix,
      method: 'GET',
      route: '/api/portal/odoo/:slug/kpis',
      status: 403,
    });
    for (const item of res.body.items) {
      expect(new Date(item.occurredAt).getTime()).toBeGreaterThanOrEqual(started - 1000);
      expect(item.latencyMs).toBeGreaterThanOrEqual(0);
      expect(item.requestId).toMatch(/\S+/);
    }
    expect(JSON.stringify(res.body)).not.toContain(key.token.slice(16));
    expect(res.body.nextCursor).toBeNull();
  });

  it('stores each call in the partition of its day', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken);
    await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token });
    await readLog(accessToken);
    const { rows } = await pool.query(
      "SELECT tableoid::regclass::text AS partition, to_char(occurred_at AT TIME ZONE 'UTC', 'YYYYMMDD') AS day FROM execution_log WHERE workspace_id = $1",
      [workspace.id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].partition).toBe(`execution_log_p${rows[0].day}`);
  });

  it('stores text with tabs, line breaks and backslashes as it was (COPY escaping)', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
    const log = new ExecutionLog({ pool, log: api.app.log, flushMs: 60_000, partitionsAhead: 1 });
    const route = 'GET /odd\tpath\nwith\\N and \\ backslashes\r';
    // a millisecond below 100: the time is written with its three digits (.007, not .7)
    const occurredAt = Date.now() - (Date.now() % 1000) + 7;
    log.record({
      occurredAt,
      workspaceId: workspace.id,
      keyPrefix: 'ws_live_ODD',
      method: 'GET',
      route,
      status: 200,
      latencyMs: 1.5,
      requestId: 'req\\1',
    });
    await log.close();
    const items = (await readLog(accessToken)).body.items;
    expect(items).toEqual([
      expect.objectContaining({
        route,
        requestId: 'req\\1',
        keyPrefix: 'ws_live_ODD',
        latencyMs: 1.5,
        occurredAt: new Date(occurredAt).toISOString(),
      }),
    ]);
  });

  it('keeps every call of a burst, in order, when the API closes before its next flush (as on SIGTERM)', async () => {
    // its own API whose buffer is written only when it closes: the close (what SIGTERM runs) must write it all
    const closing = await startTestApi({ EXECUTION_LOG_FLUSH_MS: '600000' });
    let closed = false;
    try {
      const { workspace, accessToken } = await adminOfNewWorkspace(closing.base, pool);
      const key = await createKey(closing.base, accessToken);
      const self = () => call(closing.base, 'GET', '/api/portal/apikeys/self', { token: key.token });
      const burst = await Promise.all(Array.from({ length: 40 }, self));
      const sequential = [];
      for (let i = 0; i < 10; i++) sequential.push(await self());
      const requestIds = (calls: { status: number; headers: Headers }[]) =>
        calls.map((c) => (expect(c.status).toBe(200), c.headers.get('x-request-id')!));
      expect((await pool.query('SELECT 1 FROM execution_log WHERE workspace_id = $1', [workspace.id])).rowCount).toBe(
        0,
      );

      await closing.close();
      closed = true;
      const { rows } = await pool.query<{ requestId: string }>(
        'SELECT request_id AS "requestId" FROM execution_log WHERE workspace_id = $1 ORDER BY occurred_at, id',
        [workspace.id],
      );
      expect(rows.map((r) => r.requestId).sort()).toEqual(requestIds([...burst, ...sequential]).sort());
      // the calls made one after the other are the last ten, in the order they were made
      expect(rows.slice(-10).map((r) => r.requestId)).toEqual(requestIds(sequential));
    } finally {
      if (!closed) await closing.close();
    }
  });

  it('pages newest first with a cursor, without gaps or repeats', async () => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, accessToken);
    for (let i = 0; i < 5; i++) await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token });
    const seen: string[] = [];
    let cursor: string | null = '';
    let pages = 0;
    while (cursor !== null) {
      const res = await readLog(accessToken, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items.map((i: { id: string }) => i.id));
      cursor = res.body.nextCursor;
      pages++;
    }
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(5);
    const { rows } = await pool.query<{ id: string }>(
      `SELECT public_id::text AS id FROM execution_log l JOIN workspace_api_keys k ON k.workspace_id = l.workspace_id AND k.prefix = l.key_prefix
        WHERE k.id = $1 ORDER BY occurred_at DESC, l.id DESC`,
      [key.id],
    );
    expect(seen).toEqual(rows.map((r) => r.id));
  });

  it("shows ids and cursors that reveal nothing of other workspaces' calls: random ids, sealed cursors", async () => {
    const one = await adminOfNewWorkspace(base, pool);
    const two = await adminOfNewWorkspace(base, pool);
    const [keyOne, keyTwo] = [await createKey(base, one.accessToken), await createKey(base, two.accessToken)];
    // the two workspaces' calls interleaved: one shared counter would put two's ids between one's
    for (let i = 0; i < 3; i++) {
      await call(base, 'GET', '/api/portal/apikeys/self', { token: keyOne.token });
      await call(base, 'GET', '/api/portal/apikeys/self', { token: keyTwo.token });
    }
    const page = await readLog(one.accessToken, '?limit=2');
    expect(page.body.items).toHaveLength(2);
    for (const item of page.body.items)
      expect(item.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const internal = (
      await pool.query<{ id: string }>('SELECT id::text FROM execution_log WHERE workspace_id = $1', [one.workspace.id])
    ).rows.map((r) => r.id);
    const cursor: string = page.body.nextCursor;
    const readable = cursor
      .split('.')
      .map((part) => Buffer.from(part, 'base64url').toString('latin1'))
      .join(' ');
    for (const id of internal) expect(readable).not.toContain(id);
    // the cursor pages on; changed by one character it is refused
    expect((await readLog(one.accessToken, `?limit=2&cursor=${cursor}`)).body.items).toHaveLength(1);
    const tampered = cursor.slice(0, -2) + (cursor.at(-2) === 'A' ? 'B' : 'A') + cursor.at(-1);
    expect((await readLog(one.accessToken, `?limit=2&cursor=${tampered}`)).status).toBe(400);
  });

  it('pages calls of the same instant in id order, also where the ids gain a digit', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(base, pool);
    // ids around a power of ten: as text, "1000000000000" sorts before "999999999999"
    const ids = ['999999999998', '999999999999', '1000000000000', '1000000000001'];
    const at = new Date();
    for (const id of ids) {
      await pool.query(
        `INSERT INTO execution_log (id, occurred_at, workspace_id, key_prefix, method, route, status, latency_ms, request_id)
         OVERRIDING SYSTEM VALUE VALUES ($1::bigint, $2, $3, 'ws_live_SAME', 'GET', '/same', 200, 1, $1::text)`,
        [id, at, workspace.id],
      );
    }
    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const res = await readLog(accessToken, `?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((i: { id: string }) => i.id));
      cursor = res.body.nextCursor;
    }
    const publicIds = new Map(
      (
        await pool.query<{ id: string; public_id: string }>(
          'SELECT id::text, public_id::text FROM execution_log WHERE workspace_id = $1',
          [workspace.id],
        )
      ).rows.map((r) => [r.id, r.public_id]),
    );
    expect(seen).toEqual([...ids].reverse().map((id) => publicIds.get(id)));
  });

  it("shows one workspace's admin nothing of another workspace", async () => {
    const one = await adminOfNewWorkspace(base, pool);
    const two = await adminOfNewWorkspace(base, pool);
    const key = await createKey(base, one.accessToken);
    await call(base, 'GET', '/api/portal/apikeys/self', { token: key.token });
    expect((await readLog(one.accessToken)).body.items).toHaveLength(1);
    expect((await readLog(two.accessToken)).body.items).toEqual([]);
  });

  it.each([
    ['a cursor it did not issue', '?cursor=bm90LWEtY3Vyc29y'],
    // (time, id) in the clear, as cursors once were: a forged position
    ['a forged cursor', `?cursor=${Buffer.from(`${new Date().toISOString()}|1`).toString('base64url')}`],
    ['a limit above 500', '?limit=501'],
    ['a limit of 0', '?limit=0'],
  ])('answers 400 for %s', async (_label, query) => {
    const { accessToken } = await adminOfNewWorkspace(base, pool);
    const res = await readLog(accessToken, query);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('retention (POST /api/ops/execution-log/retention)', () => {
  it('drops the day partitions older than 90 days, keeps the rest, and creates the days ahead', async () => {
    const old = new Date(Date.now() - 120 * 86_400_000).toISOString().slice(0, 10);
    const oldName = `execution_log_p${old.replace(/-/g, '')}`;
    await pool.query('SELECT execution_log_ensure_partitions($1::date, 1)', [old]);
    await pool.query(
      `INSERT INTO execution_log (occurred_at, workspace_id, key_prefix, method, route, status, latency_ms, request_id)
       VALUES ($1::date + interval '12 hours', gen_random_uuid(), 'ws_live_OLDOLDOL', 'GET', '/x', 200, 1, 'r')`,
      [old],
    );
    const res = await call(base, 'POST', '/api/ops/execution-log/retention', {
      headers: { 'x-api-key': testKeys.operator },
    });
    expect(res.status).toBe(200);
    expect(res.body.retentionDays).toBe(90);
    // (another test file may run the retention at the same time and drop it first)
    const cutoff = new Date(Date.now() - 90 * 86_400_000).toISOString().slice(0, 10).replace(/-/g, '');
    for (const name of res.body.dropped) expect(name.slice(-8) < cutoff, name).toBe(true);
    const partitions = (
      await pool.query<{ name: string }>(
        "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'execution_log'::regclass",
      )
    ).rows.map((r) => r.name);
    expect(partitions).not.toContain(oldName);
    const today = new Date().toISOString().slice(0, 10).replace(/-/g, '');
    const inAWeek = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10).replace(/-/g, '');
    expect(partitions).toEqual(expect.arrayContaining([`execution_log_p${today}`, `execution_log_p${inAWeek}`]));
    expect((await pool.query("SELECT 1 FROM execution_log WHERE key_prefix = 'ws_live_OLDOLDOL'")).rowCount).toBe(0);
  });

  it('answers 401 without the ops key', async () => {
    expect((await call(base, 'POST', '/api/ops/execution-log/retention')).status).toBe(401);
  });
});
