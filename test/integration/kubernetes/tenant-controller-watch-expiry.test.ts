/**
 * The controller's watch expires (410 Gone) on the real API server: a private API server of this
 * file, without its watch cache so a watch is served by etcd, behind a relay the test cuts. While
 * the controller cannot watch, a TenantClient is created and another one's spec changes, and etcd
 * is compacted past the controller's resourceVersion; when the relay is back its watch resumes from
 * that resourceVersion, gets 410, and the controller lists again: each generation is applied once,
 * each resource has one workflow.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { kubectl, startKubernetes, type KubernetesServer } from '../../../scripts/local-servers.js';
import { installTenantClientCrd } from '../../../scripts/tenant-client-crd.js';
import { tenantWorkflowId } from '../../../domain/tenants/workflow-contract.js';
import type { TenantClientObject } from '../../../domain/tenants/tenant-client-api.js';
import { startTenantController, type TenantController } from '../../../services/tenant-controller/index.js';
import { tempDir } from '../../support/env.js';
import { logCapture } from '../../support/log-capture.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import {
  kubeCondition,
  startTenantPlatform,
  uniqueTenant,
  type TenantPlatform,
} from '../../support/tenant-platform.js';

let kube: KubernetesServer;
let relay: TcpProxy;
let p: TenantPlatform;
let controller: TenantController;
const log = logCapture();

beforeAll(async () => {
  const dir = tempDir('kube-watch-expiry');
  kube = await startKubernetes({ dir, extraArgs: ['--watch-cache=false'] });
  await installTenantClientCrd(kube.kubeconfigPath);
  relay = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(kube.server).port) });
  // the controller reaches the API server through the relay (the serving certificate names 127.0.0.1)
  const kc = new KubeConfig();
  kc.loadFromFile(kube.kubeconfigPath);
  kc.clusters.forEach((c) => Object.assign(c, { server: `https://127.0.0.1:${new URL(relay.url).port}` }));
  const throughRelay = path.join(dir, 'kubeconfig-relay');
  writeFileSync(throughRelay, kc.exportConfig(), { mode: 0o600 });
  p = await startTenantPlatform({
    KUBECONFIG: throughRelay,
    TENANT_CONTROLLER_LEASE: 'tenant-controller',
    TENANT_CONTROLLER_RESYNC: '300ms',
    TENANT_CONTROLLER_LEASE_DURATION: '3s',
    KUBERNETES_NAMESPACE: 'default',
  });
  controller = await startTenantController(p.cfg, {
    identity: 'watch-expiry',
    log: pino({ level: 'info' }, log.stream) as never,
  });
}, 120_000);

afterAll(async () => {
  await controller?.close();
  await p?.close();
  await relay?.close();
  await kube?.stop();
});

const admin = (args: string[], input?: string) => kubectl(kube.kubeconfigPath, args, input);
const get = (name: string) => JSON.parse(admin(['get', 'tc', name, '-o', 'json'])) as TenantClientObject;
const apply = (name: string, ownerName = 'Ada') =>
  admin(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'plana.dev/v1alpha1',
      kind: 'TenantClient',
      metadata: { name },
      spec: { subdomain: name, projectId: 5, tier: 'starter', ownerEmail: `o@${name}.test`, ownerName },
    }),
  );
const readyAt = (name: string, generation: number) =>
  expect
    .poll(
      () => {
        const o = get(name);
        return o.status?.observedGeneration === generation && kubeCondition(o, 'Ready')?.status === 'True';
      },
      { timeout: 60_000, interval: 300 },
    )
    .toBe(true);
const appliedEvents = (name: string) =>
  (
    JSON.parse(
      admin(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.name=${name}`, '-o', 'json']),
    ) as { items: { reason: string; message: string }[] }
  ).items
    .filter((e) => e.reason === 'Applied')
    .map((e) => e.message.replace(/ \(workflow.*$/, ''))
    .sort();
async function workflowRuns(name: string): Promise<number> {
  let n = 0;
  for await (const _ of p.temporal.workflow.list({ query: `WorkflowId = '${tenantWorkflowId(name)}'` })) n++;
  return n;
}

/** etcd's current revision, and a compaction up to it (what the API server does every 5 minutes). */
async function compactEtcd(): Promise<number> {
  const post = async (api: string, body: unknown) => {
    const res = await fetch(`${kube.etcdUrl}/v3/kv/${api}`, { method: 'POST', body: JSON.stringify(body) });
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as { header: { revision: string } };
  };
  const revision = Number((await post('range', { key: Buffer.from('/').toString('base64') })).header.revision);
  await post('compaction', { revision, physical: true });
  return revision;
}

it('relists after its watch expired (410): what changed meanwhile is applied once, no second workflow', async () => {
  const [first, second] = [uniqueTenant('gone'), uniqueTenant('gone')];
  apply(first);
  await readyAt(first, 1);
  const seenVersion = get(first).metadata.resourceVersion!;
  const lists = () => log.lines.filter((l) => l.msg === 'TenantClients listed again (the watch expired)').length;
  expect(lists()).toBe(0);

  await relay.down();
  apply(second);
  apply(first, 'Grace'); // generation 2
  await compactEtcd();
  // a watch from what the controller last saw is gone now
  const watch = admin([
    'get',
    '--raw',
    `/apis/plana.dev/v1alpha1/tenantclients?watch=1&resourceVersion=${seenVersion}&timeoutSeconds=1`,
  ]);
  expect(watch).toMatch(/"code":410/);

  await relay.up();
  await readyAt(second, 1);
  await readyAt(first, 2);
  expect(lists()).toBeGreaterThanOrEqual(1);
  await sleep(2_000); // more passes: still once
  expect(appliedEvents(first)).toEqual(['generation 1 created', 'generation 2 configured']);
  expect(appliedEvents(second)).toEqual(['generation 1 created']);
  expect(await workflowRuns(first)).toBe(1);
  expect(await workflowRuns(second)).toBe(1);
  const owner = await p.pool.query('SELECT owner_name FROM tenants WHERE name = $1', [first]);
  expect(owner.rows).toEqual([{ owner_name: 'Grace' }]);
}, 180_000);
