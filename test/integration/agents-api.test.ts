/**
 * The agents end to end, over real HTTP: a workspace key → the account API → the agents service →
 * the model (the OpenAI-compatible stand-in in sandbox/llm) and, for its tools, the data service →
 * the tenant's ERP (the Odoo stand-in over XML-RPC) on a real tenant database cloned from a template.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApi } from '../../api/server.js';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import type { ErpStandIn } from '../../sandbox/erp/server.js';
import type { LlmStandIn } from '../../sandbox/llm/server.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { WorkspaceGrants } from '../../domain/agents/workspace-grant.js';
import { erpTestConfig, provisionTestTenant, startTestErp, type TestTenant } from '../support/erp-tenant.js';
import { addUser, adminOfNewWorkspace, call, createKey, login } from '../support/workspace-api.js';
import { agentsSettings, sseEvents, startAgentServices, startTestLlm } from '../support/agents.js';
import { freePort } from '../../scripts/local-servers.js';
import { startAgents } from '../../services/agents/server.js';

let cfg: Config;
let pool: Pool;
let admin: Pool;
let erp: ErpStandIn;
let llm: LlmStandIn;
let services: Awaited<ReturnType<typeof startAgentServices>>;
let api: Awaited<ReturnType<typeof startApi>>;
let base: string;
let tenant: TestTenant;
let workspaceId: string;
let ownerToken: string;
let dashboardKey: string;
let other: { workspaceId: string; accessToken: string; key: string };

/** A new agents:invoke key of the tenant's workspace (each key has 10 agent calls a minute). */
const invokeKey = async () => (await createKey(base, ownerToken, { name: 'agents', scopes: ['agents:invoke'] })).token;

beforeAll(async () => {
  const erpCfg = await erpTestConfig();
  pool = createPool(erpCfg.DATABASE_URL, 2);
  admin = createPool(erpCfg.ERP_DATABASE_URL, 2);
  erp = await startTestErp(erpCfg);
  // a pause between streamed chunks, so that a stream can be watched arriving and cut off midway
  llm = await startTestLlm(25);
  cfg = await erpTestConfig({ ERP_URL: erp.url, ...(await agentsSettings(llm.url)) });
  services = await startAgentServices(cfg);
  api = await startApi(cfg);
  base = cfg.API_PUBLIC_URL;
  tenant = await provisionTestTenant(cfg, pool, admin, { tier: 'pro', version: '18', erpUrl: erp.url });
  workspaceId = (await pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [tenant.workspace]))
    .rows[0]!.id;
  const owner = await addUser(pool, [{ workspaceId, role: 'admin' }]);
  ownerToken = await login(base, owner);
  dashboardKey = (await createKey(base, ownerToken, { name: 'dashboards', scopes: ['dashboard:read'] })).token;
  const b = await adminOfNewWorkspace(base, pool);
  other = {
    workspaceId: b.workspace.id,
    accessToken: b.accessToken,
    key: (await createKey(base, b.accessToken, { name: 'b', scopes: ['agents:invoke'] })).token,
  };
});

afterAll(async () => {
  await api?.close();
  await services?.close();
  await llm?.close();
  await erp?.close();
  await pool?.end();
  await admin?.end();
});

describe('POST /api/agents/:agentId/chat', () => {
  it("answers a cash question from the workspace's real ERP figures, calling get_kpis", async () => {
    const key = await invokeKey();
    const before = llm.requests.length;
    const res = await call(base, 'POST', '/api/agents/finance/chat', {
      token: key,
      body: { message: 'What is our cash balance right now?' },
    });
    expect(res.status).toBe(200);
    expect(res.body.toolCalls).toEqual([expect.objectContaining({ name: 'get_kpis', arguments: {}, ok: true })]);
    const kpis = (await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token: dashboardKey })).body;
    expect(kpis.cashJournals.length).toBeGreaterThan(0);
    expect(res.body.answer).toContain(`Your cash balance is ${kpis.cashBalance.toFixed(2)} ${kpis.currency}`);
    for (const j of kpis.cashJournals)
      expect(res.body.answer).toContain(`${j.name} ${j.balance.toFixed(2)} ${kpis.currency}`);
    expect(res.body.usage.totalTokens).toBeGreaterThan(0);
    expect(res.headers.get('ratelimit-limit')).toBe('10');
    expect(res.headers.get('ratelimit-remaining')).toBe('9');

    // what the model saw: the agent's tools offered, one round of tool calls, then the answer
    const seen = llm.requests.slice(before);
    expect(seen.map((r) => [r.decision, r.stream])).toEqual([
      ['tools', true],
      ['answer', true],
    ]);
    expect(seen[0]!.tools).toEqual(['get_kpis', 'get_cashflow', 'get_overdue_invoices']);
    expect(seen[0]!.toolCalls).toEqual([{ name: 'get_kpis', arguments: {} }]);
  });

  it('calls two tools for a two-part question and names the overdue invoices', async () => {
    const key = await invokeKey();
    const res = await call(base, 'POST', '/api/agents/finance/chat', {
      token: key,
      body: { message: 'How much cash do we have, and which invoices are overdue?' },
    });
    expect(res.status).toBe(200);
    expect(res.body.toolCalls.map((t: { name: string; ok: boolean }) => [t.name, t.ok])).toEqual([
      ['get_kpis', true],
      ['get_overdue_invoices', true],
    ]);
    const alerts = (await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/alerts`, { token: dashboardKey }))
      .body;
    expect(alerts.overdueInvoices.count).toBeGreaterThan(0);
    expect(res.body.answer).toContain(
      `${alerts.overdueInvoices.count} customer invoices are overdue, ${alerts.overdueInvoices.total.toFixed(2)} ${alerts.currency} in total`,
    );
    for (const inv of alerts.overdueInvoices.oldest) expect(res.body.answer).toContain(inv.number);
  });

  it('the collections agent has only its own tool', async () => {
    const key = await invokeKey();
    const before = llm.requests.length;
    const res = await call(base, 'POST', '/api/agents/collections/chat', {
      token: key,
      body: { message: 'What is our cash balance and what is overdue?' },
    });
    expect(res.status).toBe(200);
    expect(res.body.toolCalls.map((t: { name: string }) => t.name)).toEqual(['get_overdue_invoices']);
    expect(llm.requests[before]!.tools).toEqual(['get_overdue_invoices']);
  });

  it('records the execution: key prefix, size, tools, tokens, latency, outcome, and never the question', async () => {
    const created = await createKey(base, ownerToken, { name: 'recorded', scopes: ['agents:invoke'] });
    const question = 'Which customer invoices are overdue? My secret note: Zebra-4711';
    const chat = await call(base, 'POST', '/api/agents/finance/chat', {
      token: created.token,
      body: { message: question },
    });
    expect(chat.status).toBe(200);
    const res = await fetch(`${base}/api/agents/finance/executions?limit=5`, {
      headers: { authorization: `Bearer ${created.token}` },
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain('Zebra-4711');
    const newest = JSON.parse(text).items[0];
    expect(newest).toMatchObject({
      id: chat.body.executionId,
      agentId: 'finance',
      keyPrefix: created.prefix,
      mode: 'chat',
      inputChars: question.length,
      toolsCalled: [expect.objectContaining({ name: 'get_overdue_invoices', ok: true })],
      model: 'plana-standin-1',
      outcome: 'succeeded',
      errorCode: null,
    });
    expect(newest.tokens.total).toBe(chat.body.usage.totalTokens);
    expect(newest.latencyMs).toBeGreaterThanOrEqual(0);
    const rows = await pool.query('SELECT * FROM agent_executions WHERE id = $1', [chat.body.executionId]);
    expect(JSON.stringify(rows.rows)).not.toContain('Zebra-4711');
  });

  it('answers without tools when the question needs none', async () => {
    const key = await invokeKey();
    const res = await call(base, 'POST', '/api/agents/finance/chat', { token: key, body: { message: 'Hello there' } });
    expect(res.status).toBe(200);
    expect(res.body.toolCalls).toEqual([]);
    expect(res.body.answer).toMatch(/cash flow, overdue invoices/);
  });

  it('refuses an unknown agent (404) and an empty question (400) with problems', async () => {
    const key = await invokeKey();
    const unknown = await call(base, 'POST', '/api/agents/nobody/chat', { token: key, body: { message: 'hi' } });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('application/problem+json');
    expect(unknown.body.detail).toContain('nobody');
    const empty = await call(base, 'POST', '/api/agents/finance/chat', { token: key, body: { message: '' } });
    expect(empty.status).toBe(400);
    const extra = await call(base, 'POST', '/api/agents/finance/chat', {
      token: key,
      body: { message: 'hi', workspace: 'other' },
    });
    expect(extra.status).toBe(400);
  });
});

describe('POST /api/agents/:agentId/chat/stream', () => {
  it('streams the answer chunk by chunk: several deltas arrive before the end', async () => {
    const key = await invokeKey();
    const res = await fetch(`${base}/api/agents/finance/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'What is our cash balance?' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const reads: string[] = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      reads.push(decoder.decode(value, { stream: true }));
    }
    // the reads that carried answer pieces, before the one that carried the end
    const end = reads.findIndex((r) => r.includes('event: done'));
    expect(end).toBeGreaterThan(0);
    expect(reads.slice(0, end).filter((r) => r.includes('event: delta')).length).toBeGreaterThanOrEqual(3);

    const events = sseEvents(reads.join(''));
    expect(events[0]).toMatchObject({ event: 'execution', data: { agentId: 'finance' } });
    expect(events.find((e) => e.event === 'tool_call')).toMatchObject({ data: { name: 'get_kpis', arguments: {} } });
    expect(events.find((e) => e.event === 'tool_result')).toMatchObject({ data: { name: 'get_kpis', ok: true } });
    const answer = events
      .filter((e) => e.event === 'delta')
      .map((e) => (e.data as { content: string }).content)
      .join('');
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect((done.data as { answer: string }).answer).toBe(answer);
    const kpis = (await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token: dashboardKey })).body;
    expect(answer).toContain(`${kpis.cashBalance.toFixed(2)} ${kpis.currency}`);
  });

  it('a caller that goes away cancels the upstream request and the model call; the execution is recorded cancelled', async () => {
    const key = await invokeKey();
    const before = llm.requests.length;
    const controller = new AbortController();
    const res = await fetch(`${base}/api/agents/finance/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Which invoices are overdue, and what was our cash flow in the last 6 months?' }),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('event: delta')) text += decoder.decode((await reader.read()).value, { stream: true });
    const executionId = (sseEvents(text)[0]!.data as { executionId: string }).executionId;
    controller.abort();

    // the model's answering request (the second one) saw its client go away before the end
    await vi.waitFor(() => {
      const answering = llm.requests.slice(before).find((r) => r.decision === 'answer');
      expect(answering).toMatchObject({ aborted: true, completed: false });
    });
    await vi.waitFor(async () => {
      const { rows } = await pool.query(
        'SELECT outcome, error_code, tools_called FROM agent_executions WHERE id = $1',
        [executionId],
      );
      expect(rows[0]).toMatchObject({ outcome: 'cancelled', error_code: 'caller-gone' });
      expect(rows[0].tools_called.map((t: { name: string }) => t.name)).toEqual([
        'get_cashflow',
        'get_overdue_invoices',
      ]);
    });
  });
});

describe('GET /api/agents/:agentId/executions', () => {
  it('lists newest first, paginated with a cursor, without repeats', async () => {
    const key = await invokeKey();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await call(base, 'POST', '/api/agents/collections/chat', { token: key, body: { message: `hello ${i}` } })).body
          .executionId,
      );
    const first = await call(base, 'GET', '/api/agents/collections/executions?limit=2', { token: key });
    expect(first.status).toBe(200);
    expect(first.body.items.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await call(
      base,
      'GET',
      `/api/agents/collections/executions?limit=2&cursor=${first.body.nextCursor}`,
      { token: key },
    );
    expect(second.body.items[0].id).toBe(ids[0]);
    const all = [...first.body.items, ...second.body.items].map((e: { id: string }) => e.id);
    expect(new Set(all).size).toBe(all.length);
    const bad = await call(base, 'GET', '/api/agents/collections/executions?cursor=bm9wZQ', { token: key });
    expect(bad.status).toBe(400);
  });

  it('are visible to workspace admins logged in, and to nobody else', async () => {
    const res = await call(base, 'GET', `/api/portal/agents/finance/executions?workspace=${tenant.workspace}`, {
      token: ownerToken,
    });
    expect(res.status).toBe(200);
    expect(res.body.items.length).toBeGreaterThan(0);
    const member = await addUser(pool, [{ workspaceId, role: 'member' }]);
    const asMember = await call(base, 'GET', `/api/portal/agents/finance/executions?workspace=${tenant.workspace}`, {
      token: await login(base, member),
    });
    expect(asMember.status).toBe(403);
    const asOtherAdmin = await call(
      base,
      'GET',
      `/api/portal/agents/finance/executions?workspace=${tenant.workspace}`,
      { token: other.accessToken },
    );
    expect(asOtherAdmin.status).toBe(403);
    // the admin view needs a login: a workspace key cannot use it
    const withKey = await call(base, 'GET', `/api/portal/agents/finance/executions?workspace=${tenant.workspace}`, {
      token: await invokeKey(),
    });
    expect(withKey.status).toBe(403);
  });
});

describe('scopes and workspace binding on every agent route', () => {
  const routes: [string, string, unknown][] = [
    ['POST', '/api/agents/finance/chat', { message: 'cash?' }],
    ['POST', '/api/agents/finance/chat/stream', { message: 'cash?' }],
    ['GET', '/api/agents/finance/executions', undefined],
  ];

  it.each(routes)('%s %s: no key → 401, a key without agents:invoke → 403 naming it', async (method, path, body) => {
    const none = await call(base, method, path, { body });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await call(base, method, path, { token: dashboardKey, body });
    expect(wrong.status).toBe(403);
    expect(wrong.body.detail).toContain('agents:invoke');
  });

  it("another workspace's key reaches only its own workspace: no figures, no executions of this one", async () => {
    const ours = await call(base, 'GET', '/api/agents/finance/executions?limit=100', { token: await invokeKey() });
    const chat = await call(base, 'POST', '/api/agents/finance/chat', {
      token: other.key,
      body: { message: 'What is our cash balance?' },
    });
    expect(chat.status).toBe(200);
    // workspace B has no ERP: the tool is refused, and nothing of workspace A's figures comes back
    expect(chat.body.toolCalls).toEqual([expect.objectContaining({ name: 'get_kpis', ok: false })]);
    const kpis = (await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token: dashboardKey })).body;
    expect(chat.body.answer).not.toContain(kpis.cashBalance.toFixed(2));
    expect(chat.body.answer).toContain('I could not get the figures');
    const theirs = await call(base, 'GET', '/api/agents/finance/executions?limit=100', { token: other.key });
    expect(theirs.body.items.map((e: { id: string }) => e.id)).toEqual([chat.body.executionId]);
    const ourIds = new Set(ours.body.items.map((e: { id: string }) => e.id));
    expect(ourIds.size).toBeGreaterThan(0);
    expect(ourIds.has(chat.body.executionId)).toBe(false);
  });
});

describe('the internal services check who calls and for which workspace', () => {
  const secrets = () => new PgSecretStore(pool, cfg.SECRETS_KEY, 0);

  it('agents service: X-API-Key of the account API only, and a grant for the workspace named', async () => {
    const grants = new WorkspaceGrants(cfg.SECRETS_KEY);
    const accountKey = (await secrets().current('account-api', 'agents')).key;
    const url = `${cfg.AGENTS_URL}/agents/finance/executions`;
    const headers = (over: Record<string, string>) => ({
      'x-workspace-id': workspaceId,
      'x-workspace-grant': grants.issue(workspaceId),
      ...over,
    });
    expect((await fetch(url, { headers: headers({}) })).status).toBe(401);
    const dataKey = (await secrets().current('agents', 'data')).key;
    expect((await fetch(url, { headers: headers({ 'x-api-key': dataKey }) })).status).toBe(401);
    expect((await fetch(url, { headers: headers({ 'x-api-key': accountKey }) })).status).toBe(200);
    // a grant for workspace B does not open workspace A; nor does a forged or expired one
    expect(
      (
        await fetch(url, {
          headers: headers({ 'x-api-key': accountKey, 'x-workspace-grant': grants.issue(other.workspaceId) }),
        })
      ).status,
    ).toBe(403);
    const forged = new WorkspaceGrants(Buffer.alloc(32, 7).toString('base64')).issue(workspaceId);
    expect(
      (await fetch(url, { headers: headers({ 'x-api-key': accountKey, 'x-workspace-grant': forged }) })).status,
    ).toBe(403);
    const expired = grants.issue(workspaceId, 60, Date.now() - 120_000);
    expect(
      (await fetch(url, { headers: headers({ 'x-api-key': accountKey, 'x-workspace-grant': expired }) })).status,
    ).toBe(403);
  });

  it("data service: the agents service's key only, and only the granted workspace's figures", async () => {
    const grants = new WorkspaceGrants(cfg.SECRETS_KEY);
    const dataKey = (await secrets().current('agents', 'data')).key;
    const accountKey = (await secrets().current('account-api', 'agents')).key;
    const kpis = (ws: string, key: string, grant: string) =>
      fetch(`${cfg.DATA_URL}/data/workspaces/${ws}/kpis`, {
        headers: { 'x-api-key': key, 'x-workspace-grant': grant },
      });
    expect((await kpis(workspaceId, accountKey, grants.issue(workspaceId))).status).toBe(401);
    expect((await kpis(workspaceId, dataKey, grants.issue(other.workspaceId))).status).toBe(403);
    const ok = await kpis(workspaceId, dataKey, grants.issue(workspaceId));
    expect(ok.status).toBe(200);
    const figures = (await ok.json()) as { workspace: string; cashBalance: number };
    const viaApi = (await call(base, 'GET', `/api/portal/odoo/${tenant.workspace}/kpis`, { token: dashboardKey })).body;
    expect(figures).toMatchObject({ workspace: tenant.workspace, cashBalance: viaApi.cashBalance });
    expect((await fetch(`${cfg.DATA_URL}/readyz`)).status).toBe(200);
    expect((await fetch(`${cfg.AGENTS_URL}/readyz`)).status).toBe(200);
  });
});

describe('when the model fails', () => {
  it('an unreachable model → 503, a model refusing the key → 502; both recorded as failed', async () => {
    const grants = new WorkspaceGrants(cfg.SECRETS_KEY);
    const accountKey = (await new PgSecretStore(pool, cfg.SECRETS_KEY, 0).current('account-api', 'agents')).key;
    const cases: [Record<string, string>, number, string][] = [
      [{ LLM_URL: `http://127.0.0.1:${await freePort()}/v1` }, 503, 'model-unavailable'],
      [{ LLM_KEY: 'not-the-right-key' }, 502, 'model-error'],
    ];
    for (const [over, status, errorCode] of cases) {
      const port = await freePort();
      const broken = await startAgents({ ...cfg, AGENTS_PORT: port, ...over });
      try {
        const res = await fetch(`http://127.0.0.1:${port}/agents/finance/chat`, {
          method: 'POST',
          headers: {
            'x-api-key': accountKey,
            'x-workspace-id': workspaceId,
            'x-workspace-grant': grants.issue(workspaceId),
            'content-type': 'application/json',
          },
          body: JSON.stringify({ message: 'What is our cash balance?' }),
        });
        const body = (await res.json()) as { detail: string };
        expect(res.status).toBe(status);
        expect(body.detail).toMatch(/model/);
        expect(JSON.stringify(body)).not.toContain('not-the-right-key');
        const { rows } = await pool.query(
          'SELECT outcome, error_code FROM agent_executions WHERE workspace_id = $1 ORDER BY started_at DESC LIMIT 1',
          [workspaceId],
        );
        expect(rows[0]).toEqual({ outcome: 'failed', error_code: errorCode });
      } finally {
        await broken.close();
      }
    }
  });
});
