/**
 * The TenantClient controller as it runs in production: as ServiceAccount plana-tenant-controller
 * with only the RBAC of deploy/kubernetes/base/tenant-controller-rbac.yaml (a token from the TokenRequest
 * API, the Lease `tenant-controller` in namespace plana). With the real workflow, worker, PostgreSQL
 * and Temporal it takes a TenantClient to Ready=True (finalizer, status, Events, Lease) and through
 * its deletion: the least privilege the manifests grant is enough for what the controller does.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTenantController, type TenantController } from '../../../services/tenant-controller/index.js';
import { startTenantPlatform, uniqueTenant, type TenantPlatform } from '../../support/tenant-platform.js';
import {
  controllerScope,
  kube,
  kubeCondition,
  tenantClientEvents,
  tenantClientJson,
  waitForTenantClient,
} from '../../support/kubernetes.js';
import { manifestsDir, serviceAccountKubeconfig, kube as adminKube } from '../../support/service-accounts.js';
import { tempDir } from '../../support/env.js';

const scope = controllerScope();
const composed = ['route', 'apiUserSecret'] as const;
let p: TenantPlatform;
let controller: TenantController;

beforeAll(async () => {
  for (const f of ['namespaces.yaml', 'tenant-controller-rbac.yaml'])
    adminKube(['apply', '-f', path.join(manifestsDir, f)]);
  const asController = serviceAccountKubeconfig(tempDir('controller-sa'), 'plana', 'plana-tenant-controller');
  p = await startTenantPlatform({
    ...scope.env,
    KUBECONFIG: asController,
    TENANT_CONTROLLER_LEASE: 'tenant-controller',
    KUBERNETES_NAMESPACE: 'plana',
    TENANT_SOAK_PERIOD: '3s',
  });
  controller = await startTenantController(p.cfg, { identity: 'controller-as-its-service-account' });
});

afterAll(async () => {
  await controller?.close();
  await p?.close();
});

describe('the controller as its ServiceAccount (deploy/kubernetes RBAC)', () => {
  it('provisions a TenantClient to Ready, keeps its composed objects, records Events, holds its Lease, and completes a deletion', async () => {
    const name = uniqueTenant('rbac');
    expect(kube(['apply', '-f', '-'], tenantClientJson(name, scope.label)).ok).toBe(true);
    const obj = await waitForTenantClient(
      name,
      (o) =>
        kubeCondition(o, 'Ready')?.status === 'True' &&
        composed.every((k) => o?.status?.objects?.[k]?.synced === 'True'),
    );
    expect(obj?.status?.objects).toMatchObject({
      route: { kind: 'Ingress', namespace: 'plana-odoo-18', synced: 'True' },
      apiUserSecret: { kind: 'Secret', namespace: 'plana-odoo-18', synced: 'True' },
    });
    expect(obj?.metadata.finalizers).toContain('plana.dev/deprovision');
    expect(tenantClientEvents(name).length).toBeGreaterThan(0);
    const lease = JSON.parse(adminKube(['get', 'lease', 'tenant-controller', '-n', 'plana', '-o', 'json'])) as {
      spec: { holderIdentity?: string };
    };
    expect(lease.spec.holderIdentity).toBe('controller-as-its-service-account');

    // a tier change is applied and its status written back
    expect(kube(['patch', 'tc', name, '--type=merge', '-p', '{"spec":{"tier":"enterprise"}}']).ok).toBe(true);
    await waitForTenantClient(
      name,
      (o) => o?.status?.observedGeneration === 2 && kubeCondition(o, 'Ready')?.status === 'True',
    );

    expect(kube(['delete', 'tc', name, '--wait=false']).ok).toBe(true);
    await waitForTenantClient(name, (o) => o === undefined, 90_000);
    for (const object of [`ingress/tenant-${name}`, `secret/erp-api-user-${name}`])
      expect(() => adminKube(['get', object, '-n', 'plana-odoo-18'])).toThrow();
  }, 150_000);
});
