/**
 * The Kubernetes API server away for 60 s while tenants provision (a private API server of this
 * file, stopped and started again on the same data): the workflows go on without it; once it is
 * back the controller's status shows their true conditions, every step is an Event, and each
 * resource still has exactly one workflow.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, kubectl, startKubernetes, type KubernetesServer } from '../../../scripts/local-servers.js';
import { installTenantClientCrd } from '../../../scripts/tenant-client-crd.js';
import { tenantWorkflowId } from '../../../domain/tenants/workflow-contract.js';
import type { Condition } from '../../../domain/tenants/types.js';
import { startTenantController, type TenantController } from '../../../services/tenant-controller/index.js';
import { tempDir } from '../../support/env.js';
import {
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../../support/tenant-platform.js';

const OUTAGE_MS = 60_000;
let dir: string;
let port: number;
let kube: KubernetesServer;
let p: TenantPlatform;
let controller: TenantController;

beforeAll(async () => {
  dir = tempDir('kube-outage');
  port = await freePort();
  kube = await startKubernetes({ dir, port });
  await installTenantClientCrd(kube.kubeconfigPath);
  p = await startTenantPlatform({
    KUBECONFIG: kube.kubeconfigPath,
    TENANT_CONTROLLER_LEASE: 'tenant-controller',
    TENANT_CONTROLLER_RESYNC: '300ms',
    TENANT_CONTROLLER_LEASE_DURATION: '3s',
    KUBERNETES_NAMESPACE: 'default',
  });
  controller = await startTenantController(p.cfg, { identity: 'outage' });
});

afterAll(async () => {
  await controller?.close();
  await p?.close();
  await kube?.stop();
});

type Obj = {
  metadata: { generation: number };
  status?: { observedGeneration?: number; conditions?: Condition[]; workflowId?: string };
};
const get = (name: string) => JSON.parse(kubectl(kube.kubeconfigPath, ['get', 'tc', name, '-o', 'json'])) as Obj;
const cond = (o: Obj, type: Condition['type']) => o.status?.conditions?.find((c) => c.type === type);

const resource = (name: string) =>
  JSON.stringify({
    apiVersion: 'plana.dev/v1alpha1',
    kind: 'TenantClient',
    metadata: { name },
    spec: { subdomain: name, projectId: 3, tier: 'starter', ownerEmail: `o@${name}.test`, ownerName: 'O' },
  });

it('keeps provisioning while the API server is away for 60 s, then shows the true conditions without a second workflow', async () => {
  const names = [uniqueTenant('out'), uniqueTenant('out')];
  for (const name of names) kubectl(kube.kubeconfigPath, ['apply', '-f', '-'], resource(name));
  // the controller has applied them (the workflows run) when the API server goes away
  await expect.poll(() => names.every((n) => get(n).status?.workflowId !== undefined), { timeout: 30_000 }).toBe(true);
  await kube.stop();

  // without the API server the workflows finish provisioning
  for (const name of names) await waitForStatus(p, name, (s) => s.phase === 'Ready');
  await sleep(OUTAGE_MS);
  expect(controller.isLeader()).toBe(false);

  kube = await startKubernetes({ dir, port });
  for (const name of names) {
    await expect.poll(() => cond(get(name), 'Ready')?.status, { timeout: 60_000, interval: 500 }).toBe('True');
    const obj = get(name);
    expect(obj.status?.observedGeneration).toBe(1);
    expect(cond(obj, 'Synced')).toMatchObject({ status: 'True', reason: 'ReconcileSuccess', observedGeneration: 1 });
    // every step the workflow took while the API server was away is an Event now
    const events = JSON.parse(
      kubectl(kube.kubeconfigPath, [
        'get',
        'events',
        '-n',
        'default',
        '--field-selector',
        `involvedObject.name=${name}`,
        '-o',
        'json',
      ]),
    ) as { items: { reason: string }[] };
    const reasons = events.items.map((e) => e.reason);
    expect(reasons).toEqual(
      expect.arrayContaining(['Applied', 'ReserveSubdomain', 'ProbeHealth', 'PublishProvisionedEvent']),
    );
    expect(reasons.filter((r) => r === 'Applied')).toHaveLength(1);
    let runs = 0;
    for await (const _ of p.temporal.workflow.list({ query: `WorkflowId = '${tenantWorkflowId(name)}'` })) runs++;
    expect(runs).toBe(1);
  }
}, 240_000);
