/**
 * `npm run dev`'s demo: the tenant `demo` is a TenantClient like any other, applied on the
 * Kubernetes API and provisioned by the controller (applyDemoTenantClient), so `describe tenant demo` and `retry chat-room demo` work and a
 * restart changes nothing; and `erp post-invoice demo` makes an invoice.posted happen through the
 * real path (the ERP's automation rule → event ingestion → dispatcher) to a receiver on loopback.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardService } from '../../domain/erp/dashboards.js';
import { startDispatcher, type Dispatcher } from '../../services/webhooks/dispatcher.js';
import { applyDemoTenantClient, DEMO, prepareDemoErp, seedDemo } from '../../scripts/seed.js';
import { configEnv, startTenantPlatform, type TenantPlatform } from '../support/tenant-platform.js';
import { testKeys } from '../support/service-keys.js';
import { kubeconfigPath } from '../support/kubernetes.js';
import { addUser, call, login } from '../support/workspace-api.js';
import { startReceiver, type Receiver } from '../support/webhooks.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
let p: TenantPlatform;
let dispatcher: Dispatcher;
let receiver: Receiver;

/** The demo TenantClient applied as `npm run dev` applies it, labelled for this file's controller. */
async function applyDemoTenant(tier: 'pro' | 'starter', timeoutMs: number) {
  await p.kube.controller();
  const [key, value] = p.kube.label.split('=') as [string, string];
  return applyDemoTenantClient(kubeconfigPath(), tier, timeoutMs, { [key]: value });
}

beforeAll(async () => {
  p = await startTenantPlatform({ WEBHOOK_ALLOWED_ADDRESSES: '127.0.0.1/32' });
  dispatcher = await startDispatcher(p.cfg, { consumer: 'dev-demo' });
  receiver = await startReceiver();
  process.env.PLANA_API_URL = p.cfg.API_PUBLIC_URL;
  process.env.OPS_API_KEY = testKeys.operator;
}, 60_000);

afterAll(async () => {
  delete process.env.PLANA_API_URL;
  delete process.env.OPS_API_KEY;
  await receiver?.close();
  await dispatcher?.close();
  await p?.close();
});

async function cli(args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      `${root}node_modules/.bin/tsx`,
      [`${root}cli/index.ts`, ...args],
      {
        cwd: root,
        env: {
          PATH: process.env.PATH,
          NODE_ENV: 'test',
          ...configEnv(p.cfg),
          PLANA_API_URL: p.cfg.API_PUBLIC_URL,
          OPS_API_KEY: testKeys.operator,
          KUBECONFIG: kubeconfigPath(),
          LOG_LEVEL: 'silent',
        },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the demo tenant', () => {
  it(
    'is provisioned like any tenant: Ready, described, its chat room retried; applying it again on a restart changes nothing',
    { timeout: 120_000 },
    async () => {
      await seedDemo(p.pool, { adminPassword: 'demo-password-1234' });
      await prepareDemoErp(p.cfg);
      expect(await applyDemoTenant('pro', 60_000)).toEqual({ result: 'created', phase: 'Ready', ready: 'True' });
      expect(await applyDemoTenant('pro', 60_000)).toEqual({ result: 'unchanged', phase: 'Ready', ready: 'True' });

      const described = await cli(['describe', 'tenant', DEMO.tenant]);
      expect(described.stderr).toBe('');
      expect(described.stdout).toMatch(/Phase:\s+Ready/);
      expect(described.stdout).toContain(`tenant:${DEMO.tenant}`);
      const retried = await cli(['retry', 'chat-room', DEMO.tenant]);
      expect(retried).toMatchObject({
        code: 0,
        stdout: expect.stringContaining(`chat room of tenant ${DEMO.tenant}: retry requested`),
      });

      // its ERP answers the demo workspace's dashboards (the workspace the admin logs in to)
      const route = await p.pool.query('SELECT namespace FROM tenant_routes WHERE tenant = $1', [DEMO.tenant]);
      expect(route.rows).toEqual([{ namespace: 'plana-odoo-18' }]);
      const kpis = await createDashboardService({ pool: p.pool, config: p.cfg }).kpis(DEMO.workspace);
      expect(kpis.erpVersion).toBe('18');
    },
  );

  it(
    'erp post-invoice posts an invoice in its ERP whose invoice.posted reaches the workspace webhook',
    { timeout: 60_000 },
    async () => {
      const ws = (await p.pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [DEMO.workspace]))
        .rows[0]!;
      const token = await login(p.cfg.API_PUBLIC_URL, await addUser(p.pool, [{ workspaceId: ws.id, role: 'admin' }]));
      const created = await call(p.cfg.API_PUBLIC_URL, 'POST', '/api/portal/webhooks', {
        token,
        headers: { 'x-workspace': DEMO.workspace },
        body: { url: receiver.url, eventTypes: ['invoice.posted'] },
      });
      expect(created.status).toBe(201);

      const out = await cli(['erp', 'post-invoice', DEMO.tenant, '--amount', '240.5']);
      expect(out.stderr).toBe('');
      expect(out.code).toBe(0);
      const id = Number(/\(id (\d+)\)/.exec(out.stdout)?.[1]);
      expect(out.stdout).toMatch(/^Posted invoice INV\/\d{4}\/\d+ \(id \d+\) in the ERP of tenant demo: 240.5 /m);
      expect(out.stdout).toContain('Plana: invoice.posted');

      await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(1);
      const delivered = new Webhook(created.body.secret).verify(
        receiver.received[0]!.body,
        receiver.received[0]!.headers as Record<string, string>,
      ) as {
        type: string;
        data: { id: number; amountTotal?: number; amount_total?: number };
      };
      expect(delivered.type).toBe('invoice.posted');
      expect(delivered.data.id).toBe(id);

      // a range replay says that only failed messages are replayed
      const replay = await cli(['replay-webhooks', created.body.endpoint.id, '--since', '2020-01-01T00:00:00Z']);
      expect(replay.stdout).toContain('Replaying 0 message(s)');
      expect(replay.stdout).toContain('Note: A time range replays only messages whose delivery failed');
    },
  );

  it(
    "with another tier (ERP_BACKEND=odoo runs it as starter) is Ready once its workflow reconciled the new spec, not on the old spec's Ready",
    { timeout: 120_000 },
    async () => {
      expect(await applyDemoTenant('starter', 60_000)).toEqual({ result: 'configured', phase: 'Ready', ready: 'True' });
      const resource = await p.kube.api.get(DEMO.tenant);
      expect(resource.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
        status: 'True',
        observedGeneration: resource.metadata.generation,
      });
      expect(resource.metadata.generation).toBe(2);
    },
  );
});
