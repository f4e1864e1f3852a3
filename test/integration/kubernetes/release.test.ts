/**
 * The release's life on the run's real Kubernetes API server, with the commands docs/operators.md
 * gives: install (`kubectl apply -k deploy/kubernetes/overlays/production`), an upgrade to the next
 * version (a copy of deploy/kubernetes with the version moved on, as the next release is) that keeps
 * the CRD and a TenantClient with its spec, status and finalizer, and an uninstall
 * (`kubectl delete -k … -l 'plana.dev/uninstall!=keep'`, as a server dry run: other test files use
 * the same objects) that removes the processes and keeps the CRD, the namespaces and the volumes.
 * The API server has no controllers: Deployments are stored, not run.
 */
import { cpSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TENANT_CLIENT_FINALIZER } from '../../../domain/tenants/tenant-client-crd.js';
import { tempDir } from '../../support/env.js';
import { releaseDir, releaseObjects } from '../../support/release.js';
import { kube } from '../../support/service-accounts.js';

const VERSION = '0.1.0';
const NEXT = '0.2.0';
const tenant = `release-${Math.random().toString(36).slice(2, 8)}`;
const json = <T>(args: string[]) => JSON.parse(kube([...args, '-o', 'json'])) as T;
type Meta = { metadata: { uid: string; finalizers?: string[] } };

/** deploy/kubernetes as the next release has it: every mention of this version moved on. */
function nextRelease(): string {
  const dir = path.join(tempDir('next-release'), 'kubernetes');
  cpSync(releaseDir, dir, { recursive: true });
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((f) =>
      statSync(path.join(d, f)).isDirectory() ? walk(path.join(d, f)) : [path.join(d, f)],
    );
  for (const file of walk(dir)) writeFileSync(file, readFileSync(file, 'utf8').replaceAll(VERSION, NEXT));
  return dir;
}

afterAll(() => {
  kube(['patch', 'tc', tenant, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  kube(['delete', 'tc', tenant, '--wait=false']);
});

describe('the release on the real API server', () => {
  it('installs with one command, every object of the production overlay', () => {
    const out = kube(['apply', '-k', path.join(releaseDir, 'overlays/production')]);
    const objects = releaseObjects('production');
    expect(out.trim().split('\n')).toHaveLength(objects.length);
    const deployments = json<{ items: { metadata: { name: string } }[] }>(['get', 'deployments', '-n', 'plana']);
    expect(deployments.items.map((d) => d.metadata.name).sort()).toEqual(
      objects
        .filter((o) => o.kind === 'Deployment')
        .map((o) => o.metadata.name)
        .sort(),
    );
    expect(kube(['get', 'job', `migrate-${VERSION}`, '-n', 'plana', '-o', 'name'])).toContain('migrate');
  });

  it('upgrades to the next version and keeps the CRD and every TenantClient with its spec, status and finalizer', () => {
    kube(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'plana.dev/v1alpha1',
        kind: 'TenantClient',
        metadata: { name: tenant, finalizers: [TENANT_CLIENT_FINALIZER] },
        spec: {
          subdomain: tenant,
          projectId: 42,
          tier: 'pro',
          erpVersion: '18',
          ownerEmail: 'ada@acme.test',
          ownerName: 'Ada Lovelace',
        },
      }),
    );
    kube(['patch', 'tc', tenant, '--subresource=status', '--type=merge', '-p', '{"status":{"phase":"Ready"}}']);
    const crd = json<Meta>(['get', 'crd', 'tenantclients.plana.dev']);
    const before = json<Meta & { spec: unknown; status: unknown }>(['get', 'tc', tenant]);

    const out = kube(['apply', '-k', path.join(nextRelease(), 'overlays/production')]);
    expect(out).toContain(`job.batch/migrate-${NEXT} created`);
    expect(out).toMatch(/deployment\.apps\/worker configured/);

    expect(json<Meta>(['get', 'crd', 'tenantclients.plana.dev']).metadata.uid).toBe(crd.metadata.uid);
    const after = json<Meta & { spec: unknown; status: unknown }>(['get', 'tc', tenant]);
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.spec).toEqual(before.spec);
    expect(after.status).toEqual(before.status);
    expect(after.metadata.finalizers).toEqual([TENANT_CLIENT_FINALIZER]);
    const worker = json<{ spec: { template: { spec: { containers: { image: string }[] } } } }>([
      'get',
      'deployment',
      'worker',
      '-n',
      'plana',
    ]);
    expect(worker.spec.template.spec.containers[0]!.image).toBe(`plana/control-plane:${NEXT}`);
  });

  it('uninstalls the processes, their configuration, RBAC and policies, and keeps the CRD, the namespaces and the volumes', () => {
    const out = kube([
      'delete',
      '-k',
      path.join(releaseDir, 'overlays/production'),
      '-l',
      'plana.dev/uninstall!=keep',
      '--dry-run=server',
    ]);
    const deleted = out
      .trim()
      .split('\n')
      .map((l) => /^(\S+) "([^"]+)" deleted/.exec(l)?.slice(1, 3).join('/'));
    expect(deleted).not.toContain(undefined);
    for (const kept of [
      'customresourcedefinition.apiextensions.k8s.io/tenantclients.plana.dev',
      'namespace/plana',
      'namespace/plana-odoo-18',
      'persistentvolumeclaim/plana-filestore',
    ])
      expect(deleted).not.toContain(kept);
    for (const gone of [
      'deployment.apps/worker',
      'deployment.apps/tenant-controller',
      'configmap/plana-config',
      'networkpolicy.networking.k8s.io/default-deny-ingress',
      'clusterrole.rbac.authorization.k8s.io/plana-tenant-controller',
    ])
      expect(deleted).toContain(gone);
    const kept = releaseObjects('production').filter((o) => o.metadata.labels?.['plana.dev/uninstall'] === 'keep');
    expect(deleted).toHaveLength(releaseObjects('production').length - kept.length);
  });
});
