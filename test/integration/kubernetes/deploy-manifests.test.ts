/**
 * The release (deploy/kubernetes) on the run's real Kubernetes API server: each file of the base and
 * each overlay as `kubectl kustomize` renders it (what `kubectl apply -k` applies) passes
 * `kubectl apply --dry-run=server` (the API server's own validation and admission), and with
 * the RBAC applied, each ServiceAccount can do what its process needs and nothing more
 * (the SubjectAccessReview of `kubectl auth can-i --as=system:serviceaccount:…`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { kubectl } from '../../../scripts/local-servers.js';
import { OVERLAYS, renderRelease } from '../../support/release.js';
import { adminKubeconfig, manifestsDir } from '../../support/service-accounts.js';

const files = readdirSync(manifestsDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
const composeFile = path.join(manifestsDir, '..', '..', '..', 'docker-compose.yml');

/** The platform's processes in docker-compose.yml (the services built from its image). */
const composeProcesses = () => {
  const compose = parse(readFileSync(composeFile, 'utf8'), { merge: true }) as {
    services: Record<string, { image?: string; command?: string[] }>;
  };
  return Object.entries(compose.services)
    .filter(([, s]) => s.image === 'plana/control-plane:0.1.0')
    .map(([name, s]) => ({ name, command: s.command ?? [] }));
};
const processes = composeProcesses().map((s) => s.name);
const apply = (args: string[], input?: string) => kubectl(adminKubeconfig(), ['apply', ...args], input);

/**
 * What ServiceAccount `sa` of namespace plana may do: `yes` or `no`. The SubjectAccessReview that
 * `kubectl auth can-i --as=system:serviceaccount:plana:<sa>` sends, with the groups a ServiceAccount's
 * token carries, and the API group given explicitly (can-i guesses it from discovery, and this API
 * server does not serve every owned kind, e.g. Gateway API HTTPRoutes).
 */
function canI(
  sa: string,
  verb: string,
  resource: string,
  opts: { ns?: string; subresource?: string; name?: string } = {},
) {
  const [plural, ...group] = resource.split('.');
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: {
      user: `system:serviceaccount:plana:${sa}`,
      groups: ['system:serviceaccounts', 'system:serviceaccounts:plana', 'system:authenticated'],
      resourceAttributes: {
        verb,
        resource: plural,
        group: group.join('.'),
        namespace: opts.ns,
        subresource: opts.subresource,
        name: opts.name,
      },
    },
  };
  const answer = JSON.parse(
    kubectl(adminKubeconfig(), ['create', '-f', '-', '-o', 'json'], JSON.stringify(review)),
  ) as {
    status: { allowed: boolean };
  };
  return answer.status.allowed ? 'yes' : 'no';
}

beforeAll(() => {
  // namespaced objects need their namespace to exist, even for a dry run; RBAC is real for can-i
  apply(['-f', path.join(manifestsDir, 'namespaces.yaml')]);
  for (const f of files.filter((f) => !['tenantclient-crd.yaml', 'namespaces.yaml'].includes(f)))
    apply(['-f', path.join(manifestsDir, f)]);
});

describe('deploy/kubernetes on the real API server', () => {
  it.each(files)('%s passes kubectl apply --dry-run=server', (file) => {
    const out = apply(['--dry-run=server', '-f', path.join(manifestsDir, file)]);
    expect(out).toMatch(/\(server dry run\)/);
  });

  it.each(OVERLAYS)('the %s overlay, every object of it, passes kubectl apply --dry-run=server', (overlay) => {
    const rendered = renderRelease(overlay);
    const objects = rendered.split(/^---$/m).length;
    const out = apply(['--dry-run=server', '-f', '-'], rendered);
    expect(
      out
        .trim()
        .split('\n')
        .filter((l) => l.endsWith('(server dry run)')),
    ).toHaveLength(objects);
  });

  const controller = 'plana-tenant-controller';
  const TC = 'tenantclients.plana.dev';
  it.each([
    ['list', TC, {}],
    ['watch', TC, {}],
    ['get', TC, {}],
    ['patch', TC, {}],
    ['update', TC, {}],
    ['patch', TC, { subresource: 'status' }],
    ['update', TC, { subresource: 'status' }],
    ['update', TC, { subresource: 'finalizers' }],
    ['create', 'events', { ns: 'default' }],
    ['patch', 'events.events.k8s.io', { ns: 'default' }],
    ['create', 'leases.coordination.k8s.io', { ns: 'plana' }],
    ['get', 'leases.coordination.k8s.io', { ns: 'plana', name: 'tenant-controller' }],
    ['update', 'leases.coordination.k8s.io', { ns: 'plana', name: 'tenant-controller' }],
    ['get', 'ingresses.networking.k8s.io', { ns: 'plana-odoo-18' }],
    ['update', 'ingresses.networking.k8s.io', { ns: 'plana-odoo-19' }],
    ['create', 'secrets', { ns: 'plana-odoo-19' }],
    ['delete', 'secrets', { ns: 'plana-odoo-18' }],
    // the informers of its composed objects (services/tenant-controller/object-cache.ts)
    ['watch', 'ingresses.networking.k8s.io', { ns: 'plana-odoo-19' }],
    ['list', 'secrets', { ns: 'plana-odoo-18' }],
    ['watch', 'secrets', { ns: 'plana-odoo-18' }],
  ] as const)('the controller may %s %s %o', (verb, resource, opts) => {
    expect(canI(controller, verb, resource, opts)).toBe('yes');
  });

  it.each([
    ['create', TC, {}], // TenantClients are the operators'
    ['delete', TC, {}],
    ['delete', TC, { subresource: 'status' }],
    ['get', 'secrets', { ns: 'plana' }], // the platform's service keys
    ['get', 'secrets', { ns: 'default' }],
    ['create', 'events', { ns: 'plana' }],
    ['get', 'leases.coordination.k8s.io', { ns: 'plana', name: 'someone-elses-lease' }],
    ['update', 'leases.coordination.k8s.io', { ns: 'kube-system' }],
    ['create', 'jobs.batch', { ns: 'plana-odoo-18' }], // the platform makes no Jobs or CronJobs
    ['create', 'cronjobs.batch', { ns: 'plana-odoo-18' }],
    ['list', 'secrets', { ns: 'plana' }],
    ['watch', 'secrets', { ns: 'default' }],
    ['create', 'ingresses.networking.k8s.io', { ns: 'plana' }],
    ['create', 'cronjobs.batch', { ns: 'default' }],
    ['patch', 'httproutes.gateway.networking.k8s.io', { ns: 'plana-odoo-18' }],
    ['create', 'deployments.apps', { ns: 'plana-odoo-18' }],
    ['create', 'pods', { ns: 'plana-odoo-18' }],
    ['list', 'namespaces', {}],
    ['create', 'clusterrolebindings.rbac.authorization.k8s.io', {}],
    ['create', 'customresourcedefinitions.apiextensions.k8s.io', {}],
  ] as const)('the controller may NOT %s %s %o', (verb, resource, opts) => {
    expect(canI(controller, verb, resource, opts)).toBe('no');
  });

  it.each(['plana-worker', 'plana-migrate'])('%s writes the service-key Secrets of plana and nothing else', (sa) => {
    for (const verb of ['get', 'create', 'patch']) expect(canI(sa, verb, 'secrets', { ns: 'plana' }), verb).toBe('yes');
    for (const verb of ['list', 'watch', 'delete']) expect(canI(sa, verb, 'secrets', { ns: 'plana' }), verb).toBe('no');
    expect(canI(sa, 'get', 'secrets', { ns: 'plana-odoo-18' })).toBe('no');
    expect(canI(sa, 'list', TC)).toBe('no');
  });

  it("the API may read a TenantClient and write its spec (billing's tier change), nothing else", () => {
    for (const verb of ['get', 'update', 'patch']) expect(canI('plana-api', verb, TC), verb).toBe('yes');
    for (const verb of ['list', 'watch', 'create', 'delete']) expect(canI('plana-api', verb, TC), verb).toBe('no');
    expect(canI('plana-api', 'update', TC, { subresource: 'status' })).toBe('no');
    expect(canI('plana-api', 'get', 'secrets', { ns: 'plana' })).toBe('no');
  });

  it.each(processes.filter((p) => !['api', 'worker', 'tenant-controller', 'migrate'].includes(p)))(
    '%s has no Kubernetes access at all',
    (name) => {
      expect(canI(`plana-${name}`, 'get', TC)).toBe('no');
      expect(canI(`plana-${name}`, 'get', 'secrets', { ns: 'plana' })).toBe('no');
    },
  );
});
