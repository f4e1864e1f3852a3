/**
 * Workspace API limits on the real Redis, shared by two API replicas: the token bucket, its
 * headers and 429s, the per-workspace override operators set, and the per-minute agent limit.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../lib/config.js';
import type { Pool } from '../../lib/db.js';
import { RateLimits } from '../../domain/access/rate-limits.js';
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
    const head = await fetch(new URL('/api/portal/apikeys/self', baseA), { method: 'HEAD', headers: { authorization: `Bearer ${key.token}` } });
    expect(head.status).toBe(200);
    expect(head.headers.get('ratelimit-remaining')).toBe('2');
    const get = await call(baseA, 'GET', '/api/portal/apikeys/self', { token: key.token });
    expect(get.headers.get('ratelimit-remaining')).toBe('1');
  });

  it('is atomic: of 40 concurrent calls spread over two replicas, exactly the burst of 20 pass', async () => {
    const { key } = await keyWithLimits({ burst: 20, perSecond: 0.001, agentPerMinute: 10 });
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => call(i % 2 ? baseB : baseA, 'GET', '/api/portal/apikeys/self', { token: key.token })),
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
        Array.from({ length: 20 }, (_, i) => call(i % 2 ? baseB : baseA, 'GET', '/api/portal/apikeys/self', { token: key.token })),
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
    await ops('PUT', `/api/ops/workspaces/${workspace.slug}/rate-limits`, { burst: 1, perSecond: 0.001, agentPerMinute: 10 });
    const first = await createKey(baseA, accessToken);
    const second = await createKey(baseA, accessToken);
    expect((await call(baseA, 'GET', '/api/portal/apikeys/self', { token: first.token })).status).toBe(200);
    expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: first.token })).status).toBe(429);
    expect((await call(baseB, 'GET', '/api/portal/apikeys/self', { token: second.token })).status).toBe(200);
  });
});

describe('per-workspace overrides (ops API)', () => {
  it('shows the defaults, sets an override, and removes it', async () => {
    const { workspace } = await adminOfNewWorkspace(baseA, pool);
    const path = `/api/ops/workspaces/${workspace.slug}/rate-limits`;
    expect((await ops('GET', path)).body).toEqual({ burst: 100, perSecond: 30, agentPerMinute: 10, overridden: false });
    expect((await ops('PUT', path, { burst: 1000, perSecond: 500, agentPerMinute: 60 })).status).toBe(200);
    expect((await ops('GET', path)).body).toEqual({ burst: 1000, perSecond: 500, agentPerMinute: 60, overridden: true });
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
    expect((await pool.query('SELECT 1 FROM workspace_rate_limits WHERE workspace_id = $1', [workspace.id])).rowCount).toBe(0);
  });

  it('answers 404 for an unknown workspace and 401 without the ops key', async () => {
    expect((await ops('GET', '/api/ops/workspaces/no-such-ws/rate-limits')).status).toBe(404);
    const { workspace } = await adminOfNewWorkspace(baseA, pool);
    const res = await ops('PUT', `/api/ops/workspaces/${workspace.slug}/rate-limits`, { burst: 1, perSecond: 1, agentPerMinute: 1 }, 'wrong-key-000000000000000000');
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
