/**
 * Workspace API limits on the real Redis, shared by two API replicas: the token bucket, its
 * headers and 429s, the per-workspace override operators set, and the per-minute agent limit.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../lib/config.js';
import type { Pool } from '../../lib/db.js';
import { RateLimits } from '../../domain/access/workspace-limits.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';
import { testKeys } from '../support/service-keys.js';

let cfgA: Config;
let pool: Pool;
let replicaA: TestApi;
let replicaB: TestApi;
let baseA: string;
let baseB: string;

beforeAll(async () => {
  [replicaA, replicaB] = await Promise.all([startTestApi(), startTestApi()]);
  ({ cfg: cfgA, pool, base: baseA } = replicaA);
  baseB = replicaB.base;
});

afterAll(async () => {
  await replicaA?.close();
  await replicaB?.close();
});

const ops = (method: string, path: string, body?: unknown, key = testKeys.operator) =>
  call(baseA, method, path, { body, headers: { 'x-api-key': key } });

/** A key whose workspace has the given override (set before the key's first call). */
async function keyWithLimits(limits: { burst: number; perSecond: number; agentPerMinute: number }) {
  const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
  const put = await ops('PUT', `/api/ops/workspaces/${workspace.slug}/rate-limits`, limits);
  expect(put.status).toBe(200);
  return { workspace, key: await createKey(baseA, accessToken) };
}

describe('the token bucket per key', () => {
  it('sends RateLimit-* headers on successful answers (defaults: 100 burst)', async () => {
    const { accessToken } = await adminOfNewWorkspace(baseA, pool);
    const key = await createKey(baseA, accessToken);
    const res = await call(baseA, 'GET', '/api/portal/apikeys/self', { token: key.token });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-limit')).toBe('100');
    expect(Number(res.headers.get('ratelimit-remaining'))).toBe(99);
    expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(0);
  });

  it('counts calls on both replicas in one bucket and answers 429 with Retry-After when it is empty', async () => {
    const { key } = await keyWithLimits({ burst: 5, perSecond: 0.01, agentPerMinute: 10 });
    const remaining: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call(i % 2 ? baseB : baseA, 'GET', '/api/portal/apikeys/self', { token: key.token });
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBe('5');
      remaining.push(Number(res.headers.get('ratelimit-remaining')));
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);

    const refused = await call(baseB, 'GET', '/api/portal/apikeys/self', { token: key.token });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.body).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    // one token takes 100 s at 0.01/s
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(90);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(100);
    expect(refused.headers.get('ratelimit-limit')).toBe('5');
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
  });

  it('counts a HEAD request once, like its GET', async () => {
    const { key } = await keyWithLimits({ burst: 3, perSecond: 0.001, agentPerMinute: 10 });
    const head = await fetch(new URL('/api/portal/apikeys/self', baseA), {
      method: 'HEAD',
      headers: { authorization: `Bearer ${key.token}` },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('ratelimit-remaining')).toBe('2');
    const get = await call(baseA, 'GET', '/api/portal/apikeys/self', { token: key.token });
    expect(get.headers.get('ratelimit-remaining')).toBe('1');
  });

  it('is atomic: of 40 concurrent calls spread over two replicas, exactly the burst of 20 pass', async () => {
    const { key } = await keyWithLimits({ burst: 20, perSecond: 0.001, agentPerMinute: 10 });
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        call(i % 2 ? baseB : baseA, 'GET', '/api/portal/apikeys/self', { token: key.token }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
  });

  it('leases a busy key a few tokens at a time and still admits no more than the bucket holds, over both replicas', async () => {
    // 20/s refill: each replica leases up to 5 tokens at once (a quarter second of refill)
    const { key } = await keyWithLimits({ burst: 200, perSecond: 20, agentPerMinute: 10 });
    const started = Date.now();
    let admitted = 0;
    let refused = 0;
    const remaining: number[] = [];
    for (let batch = 0; batch < 15; batch++) {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          call(i % 2 ? baseB : baseA, 'GET', '/api/portal/apikeys/self', { token: key.token }),
        ),
      );
      for (const r of results) {
        if (r.status === 200) {
          admitted++;
          remaining.push(Number(r.headers.get('ratelimit-remaining')));
        } else {
          expect(r.status).toBe(429);
          refused++;
        }
      }
    }
    const refilled = Math.ceil(((Date.now() - started) / 1000) * 20);
    expect(admitted + refused).toBe(300);
    expect(admitted).toBeLessThanOrEqual(200 + refilled);
    // tokens a replica leased but had no request left to spend on come back later; at worst each
    // of the 10 concurrent requests per replica leased 5
    expect(admitted).toBeGreaterThanOrEqual(200 - 2 * 10 * 5);
    expect(refused).toBeGreaterThan(0);
    expect(Math.min(...remaining)).toBeLessThan(20);
  });

  it('keeps one bucket per key: an exhausted key does not slow down another key of the workspace', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
    await ops('PUT', `/api/ops/workspaces/${workspace.slug}/rate-limits`, {
      burst: 1,
      perSecond: 0.001,
      agentPerMinute: 10,
    });
    const first = await createKey(baseA, accessToken);
    const second = await createKey(baseA, accessToken);
    expect((await call(baseA, 'GET', '/api/portal/apikeys/self', { token: first.token })).status).toBe(200);
    expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: first.token })).status).toBe(429);
    expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: second.token })).status).toBe(200);
  });
});

describe("the workspace limit: all its keys together (§8 is the workspace's limit, not each key's)", () => {
  it('fresh keys do not multiply it: 3 keys × 60 parallel requests get no more than the workspace burst (100) and its refill', async () => {
    const { accessToken } = await adminOfNewWorkspace(baseA, pool);
    const keys = await Promise.all([1, 2, 3].map((n) => createKey(baseA, accessToken, { name: `key ${n}` })));
    const started = Date.now();
    const results = await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: 60 }, (_, i) =>
          call(i % 2 ? baseB : baseA, 'GET', '/api/portal/apikeys/self', { token: key.token }),
        ),
      ),
    );
    const refilled = Math.ceil(((Date.now() - started) / 1000) * 30);
    const admitted = results.filter((r) => r.status === 200).length;
    expect(admitted).toBeLessThanOrEqual(100 + refilled);
    const refused = results.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.body).toMatchObject({ status: 429, code: 'RATE_LIMITED', rateLimit: 'workspace' });
    expect(refused[0]!.body.detail).toMatch(
      /exceeded its limit of 100 requests burst, 30\/s sustained, shared by all its keys; retry after \d+ s/,
    );
    expect(Number(refused[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused[0]!.headers.get('ratelimit-limit')).toBe('100');
    expect(refused[0]!.headers.get('ratelimit-remaining')).toBe('0');
  });

  it('is one bucket over both replicas, set per workspace: of 3 keys × 5 calls exactly the workspace burst of 8 pass', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
    const put = await ops('PUT', `/api/ops/workspaces/${workspace.slug}/rate-limits`, {
      burst: 5,
      perSecond: 0.001,
      agentPerMinute: 10,
      workspaceBurst: 8,
      workspacePerSecond: 0.001,
    });
    expect(put.status).toBe(200);
    const keys = await Promise.all([1, 2, 3].map((n) => createKey(baseA, accessToken, { name: `key ${n}` })));
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      for (const [k, key] of keys.entries())
        statuses.push(
          (await call((i + k) % 2 ? baseB : baseA, 'GET', '/api/portal/apikeys/self', { token: key.token })).status,
        );
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(8);
    expect(statuses.slice(8).every((s) => s === 429)).toBe(true);
    // another workspace is not slowed down by this one
    const other = await adminOfNewWorkspace(baseA, pool);
    expect(
      (
        await call(baseB, 'GET', '/api/portal/apikeys/self', {
          token: (await createKey(baseA, other.accessToken)).token,
        })
      ).status,
    ).toBe(200);
  });
});

describe('the cap on live API keys per workspace', () => {
  it('refuses a key past the cap with 409 naming it, and takes one again once a key is revoked', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
    expect(
      (
        await ops('PUT', `/api/ops/workspaces/${workspace.slug}/rate-limits`, {
          burst: 100,
          perSecond: 30,
          agentPerMinute: 10,
          maxApiKeys: 3,
        })
      ).status,
    ).toBe(200);
    // concurrent creates cannot pass the cap together
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        call(baseA, 'POST', '/api/portal/apikeys', { token: accessToken, body: { name: `key ${i}` } }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 409, 409]);
    const refused = results.find((r) => r.status === 409)!;
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.body).toMatchObject({ status: 409, maxKeys: 3, liveKeys: 3 });
    expect(refused.body.detail).toContain('its cap of 3');
    expect((await call(baseA, 'GET', '/api/portal/apikeys', { token: accessToken })).body.items).toHaveLength(3);
    const revoked = results.find((r) => r.status === 201)!.body.id as string;
    expect((await call(baseA, 'DELETE', `/api/portal/apikeys/${revoked}`, { token: accessToken })).status).toBe(204);
    expect(
      (await call(baseA, 'POST', '/api/portal/apikeys', { token: accessToken, body: { name: 'again' } })).status,
    ).toBe(201);
  });

  it('caps at 50 live keys by default', async () => {
    const { workspace, accessToken } = await adminOfNewWorkspace(baseA, pool);
    // 50 keys straight into the table (50 creates through the API would cost 50 bcrypt hashes)
    await pool.query(
      `INSERT INTO workspace_api_keys (workspace_id, name, prefix, token_hash, scopes)
       SELECT $1, 'bulk ' || n, 'ws_live_' || substr(md5(random()::text), 1, 8) || n, 'x', '{dashboard:read}' FROM generate_series(1, 50) n`,
      [workspace.id],
    );
    const res = await call(baseA, 'POST', '/api/portal/apikeys', {
      token: accessToken,
      body: { name: 'one too many' },
    });
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain('its cap of 50');
  });
});

describe('per-workspace overrides (ops API)', () => {
  it('shows the defaults, sets an override, and removes it', async () => {
    const { workspace } = await adminOfNewWorkspace(baseA, pool);
    const path = `/api/ops/workspaces/${workspace.slug}/rate-limits`;
    expect((await ops('GET', path)).body).toEqual({
      burst: 100,
      perSecond: 30,
      agentPerMinute: 10,
      workspaceBurst: 100,
      workspacePerSecond: 30,
      maxApiKeys: 50,
      overridden: false,
    });
    // a raised per-key limit raises the workspace's with it (never below one key's)
    expect((await ops('PUT', path, { burst: 1000, perSecond: 500, agentPerMinute: 60 })).status).toBe(200);
    expect((await ops('GET', path)).body).toEqual({
      burst: 1000,
      perSecond: 500,
      agentPerMinute: 60,
      workspaceBurst: 1000,
      workspacePerSecond: 500,
      maxApiKeys: 50,
      overridden: true,
    });
    expect(
      (
        await ops('PUT', path, {
          burst: 100,
          perSecond: 30,
          agentPerMinute: 10,
          workspaceBurst: 400,
          workspacePerSecond: 90,
          maxApiKeys: 200,
        })
      ).status,
    ).toBe(200);
    expect((await ops('GET', path)).body).toMatchObject({
      burst: 100,
      workspaceBurst: 400,
      workspacePerSecond: 90,
      maxApiKeys: 200,
      overridden: true,
    });
    expect((await ops('DELETE', path)).status).toBe(204);
    expect((await ops('GET', path)).body.overridden).toBe(false);
  });

  it.each([
    ['a zero rate', { burst: 10, perSecond: 0, agentPerMinute: 10 }],
    ['a missing field', { burst: 10, perSecond: 5 }],
    ['a negative burst', { burst: -1, perSecond: 5, agentPerMinute: 10 }],
  ])('refuses %s with 400 and changes nothing', async (_label, body) => {
    const { workspace } = await adminOfNewWorkspace(baseA, pool);
    const res = await ops('PUT', `/api/ops/workspaces/${workspace.slug}/rate-limits`, body);
    expect(res.status).toBe(400);
    expect(
      (await pool.query('SELECT 1 FROM workspace_rate_limits WHERE workspace_id = $1', [workspace.id])).rowCount,
    ).toBe(0);
  });

  it('answers 404 for an unknown workspace and 401 without the ops key', async () => {
    expect((await ops('GET', '/api/ops/workspaces/no-such-ws/rate-limits')).status).toBe(404);
    const { workspace } = await adminOfNewWorkspace(baseA, pool);
    const res = await ops(
      'PUT',
      `/api/ops/workspaces/${workspace.slug}/rate-limits`,
      { burst: 1, perSecond: 1, agentPerMinute: 1 },
      'wrong-key-000000000000000000',
    );
    expect(res.status).toBe(401);
  });
});

describe('agent invocations: 10 per minute per key (shared through Redis)', () => {
  it('admits 10 in a minute, refuses the 11th with the seconds until the window ends, per key', async () => {
    const [a, b] = [replicaA, replicaB].map((r) => new RateLimits({ pool, redis: r.app.deps.redis, config: cfgA }));
    const limits = { burst: 100, perSecond: 30, agentPerMinute: 10 };
    const keyId = randomUUID();
    const outcomes = [];
    for (let i = 0; i < 11; i++) outcomes.push(await (i % 2 ? b! : a!).admitAgentInvocation(keyId, limits));
    expect(outcomes.slice(0, 10).every((o) => o.allowed)).toBe(true);
    expect(outcomes.map((o) => o.remaining).slice(0, 10)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(outcomes[10]).toMatchObject({ allowed: false, limit: 10, remaining: 0 });
    expect(outcomes[10]!.reset).toBeGreaterThan(0);
    expect(outcomes[10]!.reset).toBeLessThanOrEqual(60);
    expect((await a!.admitAgentInvocation(randomUUID(), limits)).allowed).toBe(true);
  });
});
