/**
 * §8: 10 agent calls per minute per workspace key, shared by every API replica. Two account API
 * processes on the same PostgreSQL and Redis, in front of one agents service: the 11th call in the
 * minute is refused with 429, Retry-After and RateLimit-* on whichever replica it lands, and it
 * never reaches the agents service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { freePort } from '../../scripts/local-servers.js';
import type { LlmStandIn } from '../../sandbox/llm/server.js';
import { apiProcessEnv, startApiProcess } from '../support/api.js';
import { testConfig } from '../support/env.js';
import { agentsSettings, startAgentServices, startTestLlm } from '../support/agents.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';

let cfg: Config;
let pool: Pool;
let llm: LlmStandIn;
let services: Awaited<ReturnType<typeof startAgentServices>>;
const replicas: { base: string; process: Awaited<ReturnType<typeof startApiProcess>> }[] = [];

beforeAll(async () => {
  llm = await startTestLlm();
  cfg = await testConfig(await agentsSettings(llm.url));
  pool = createPool(cfg.DATABASE_URL, 2);
  services = await startAgentServices(cfg);
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = apiProcessEnv(cfg, {
      LOG_LEVEL: 'silent',
      API_PORT: String(port),
      API_PUBLIC_URL: base,
      AGENTS_URL: cfg.AGENTS_URL,
    });
    replicas.push({ base, process: await startApiProcess(env, base) });
  }
});

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.process.stop()));
  await services?.close();
  await llm?.close();
  await pool?.end();
});

describe('10 agent calls per minute per key, across API replicas', () => {
  it('the 11th call → 429 with Retry-After and RateLimit headers, on either replica; another key is unaffected', async () => {
    const [a, b] = replicas;
    const { workspace, accessToken } = await adminOfNewWorkspace(a!.base, pool);
    const key = (await createKey(a!.base, accessToken, { name: 'agents', scopes: ['agents:invoke'] })).token;

    // ten calls alternating between the replicas, chat and chat/stream alike
    for (let i = 0; i < 10; i++) {
      const replica = i % 2 ? b! : a!;
      const path = i % 3 === 2 ? '/api/agents/finance/chat/stream' : '/api/agents/finance/chat';
      const res = await fetch(`${replica.base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ message: `hello ${i}` }),
      });
      await res.text();
      expect(res.status, `call ${i + 1}`).toBe(200);
      expect(res.headers.get('ratelimit-limit')).toBe('10');
      expect(res.headers.get('ratelimit-remaining')).toBe(String(9 - i));
    }

    for (const replica of [a!, b!]) {
      const refused = await call(replica.base, 'POST', '/api/agents/finance/chat', {
        token: key,
        body: { message: 'one more' },
      });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.headers.get('ratelimit-limit')).toBe('10');
      expect(refused.headers.get('ratelimit-remaining')).toBe('0');
      expect(Number(refused.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
      expect(refused.body.detail).toContain('10 agent invocations per minute');
    }

    // the refused calls never reached the agents service; reading executions does not count
    const executions = await call(b!.base, 'GET', '/api/agents/finance/executions?limit=100', { token: key });
    expect(executions.status).toBe(200);
    expect(executions.body.items).toHaveLength(10);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM agent_executions WHERE workspace_id = $1', [
      workspace.id,
    ]);
    expect(rows[0].n).toBe(10);

    const fresh = (await createKey(a!.base, accessToken, { name: 'another', scopes: ['agents:invoke'] })).token;
    const ok = await call(b!.base, 'POST', '/api/agents/finance/chat', { token: fresh, body: { message: 'hello' } });
    expect(ok.status).toBe(200);
  });
});
