/**
 * The first agent call of an account API process, as docs/api.md's order makes it: a key with
 * banking:read and agents:invoke makes a bank consent (banking service → bank stand-in), then asks
 * the finance agent with docs/api.md's own body. The agent limit (rate-limiter-flexible on the
 * workspace-auth Redis connection, which pipelines automatically) is first used then, while the
 * key's token lease is being renewed on that connection: the call must reach the agents service.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import type { startBanking } from '../../services/banking/server.js';
import { startBankStandIn, type BankStandIn } from '../../sandbox/bank/server.js';
import { freePort } from '../../scripts/local-servers.js';
import { RateLimits } from '../../domain/access/workspace-limits.js';
import type { TestApi } from '../support/api.js';
import { startApiWithBanking } from '../support/banking.js';
import { adminOfNewWorkspace, call, createKey } from '../support/workspace-api.js';
import { agentsSettings, startAgentServices, startTestLlm } from '../support/agents.js';
import { testConfig } from '../support/env.js';
import type { LlmStandIn } from '../../sandbox/llm/server.js';

let api: TestApi;
let banking: Awaited<ReturnType<typeof startBanking>>;
let bank: BankStandIn;
let llm: LlmStandIn;
let agentServices: Awaited<ReturnType<typeof startAgentServices>>;

beforeAll(async () => {
  bank = await startBankStandIn({ bankId: 'sandbox', port: await freePort() });
  llm = await startTestLlm();
  const agents = await agentsSettings(llm.url);
  ({ api, banking } = await startApiWithBanking({ banks: () => `sandbox=${bank.url}`, api: agents }));
  agentServices = await startAgentServices(await testConfig(agents));
});

afterAll(async () => {
  await api?.close();
  await agentServices?.close();
  await banking?.close();
  await llm?.close();
  await bank?.close();
});

describe('the first agent call of a process', () => {
  it('right after a bank consent with the same key (docs/api.md order) reaches the agents service and answers 200', async () => {
    const admin = await adminOfNewWorkspace(api.base, api.pool);
    const key = (
      await createKey(api.base, admin.accessToken, { name: 'bank+agents', scopes: ['banking:read', 'agents:invoke'] })
    ).token;
    expect((await call(api.base, 'GET', '/api/banking/adapters', { token: key })).status).toBe(200);
    // a pace between two commands (0.1 to 0.25 s) at which the consent request leases 2 or 3 tokens:
    // the agent call then spends half of them, so the lease's renewal is on its way to Redis while
    // the agent limit is checked for the first time (domain/access/workspace-limits.ts)
    await new Promise((r) => setTimeout(r, 90));
    const consent = await call(api.base, 'POST', '/api/banking/sandbox/consent', {
      token: key,
      body: {
        validUntil: new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10),
        frequencyPerDay: 4,
        recurringIndicator: true,
        redirectUrl: 'https://app.example/done',
      },
    });
    expect(consent.status).toBe(201);
    const before = llm.requests.length;
    const chat = await call(api.base, 'POST', '/api/agents/finance/chat', {
      token: key,
      body: { message: 'How much is overdue?' },
    });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    expect(chat.body.answer).toEqual(expect.any(String));
    expect(llm.requests.length).toBeGreaterThan(before);
    // and the process is still up for the next one
    expect(
      (
        await call(api.base, 'POST', '/api/agents/finance/chat', {
          token: key,
          body: { message: 'How much is overdue?' },
        })
      ).status,
    ).toBe(200);
  });

  it('the agent limit answers while another command of its auto-pipelined connection is on its way', async () => {
    const redis = new Redis(inject('redisUrl'), { enableAutoPipelining: true, maxRetriesPerRequest: 2 });
    const limits = new RateLimits({
      pool: api.pool,
      redis,
      config: {
        RATE_LIMIT_BURST: 100,
        RATE_LIMIT_PER_SECOND: 30,
        RATE_LIMIT_AGENT_PER_MINUTE: 10,
        RATE_LIMIT_WORKSPACE_BURST: 100,
        RATE_LIMIT_WORKSPACE_PER_SECOND: 30,
        API_KEY_MAX_PER_WORKSPACE: 50,
      },
    });
    try {
      const keyId = randomUUID();
      // a bucket admission queued in this tick (as a lease renewal is), then the first agent invocation
      const limitsOfKey = {
        burst: 100,
        perSecond: 30,
        agentPerMinute: 10,
        workspaceBurst: 100,
        workspacePerSecond: 30,
        maxApiKeys: 50,
      };
      const admitted = limits.admitRequest({ id: keyId, workspaceId: randomUUID() }, limitsOfKey, {
        checkRevoked: false,
      });
      const invocation = limits.admitAgentInvocation(keyId, { agentPerMinute: 10 });
      expect((await admitted).allowed).toBe(true);
      expect(await invocation).toMatchObject({ allowed: true, limit: 10, remaining: 9 });
      // an operator's override makes a second limiter: the same, with another pipeline open
      const other = randomUUID();
      void redis.get(`unrelated-${other}`);
      expect(await limits.admitAgentInvocation(other, { agentPerMinute: 25 })).toMatchObject({
        allowed: true,
        limit: 25,
        remaining: 24,
      });
    } finally {
      limits.close();
      redis.disconnect();
    }
  });
});
