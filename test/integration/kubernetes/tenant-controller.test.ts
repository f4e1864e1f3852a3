/**
 * The TenantClient controller on the real API server, with the real workflow, worker, PostgreSQL
 * and Temporal: kubectl apply provisions a tenant whose status subresource shows the workflow's
 * conditions; a rule the schema cannot say (a subdomain taken, an ERP version changed) is
 * Synced=False; Events read like the workflow's history; deletion waits on the finalizer until
 * the tenant is deprovisioned; two controllers elect one leader.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Reconciler } from '../../../services/tenant-controller/reconciler.js';
import { ComposedObjectCache } from '../../../services/tenant-controller/object-cache.js';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { tenantWorkflowId } from '../../../domain/tenants/workflow-contract.js';
import { startTenantController, type TenantController } from '../../../services/tenant-controller/index.js';
import {
  startTenantPlatform,
  uniqueTenant,
  waitForStatus,
  type TenantPlatform,
} from '../../support/tenant-platform.js';
import {
  controllerScope,
  getTenantClient,
  kube,
  kubeconfigPath,
  kubeCondition,
  tenantClientEvents,
  tenantClientJson,
  waitForTenantClient,
} from '../../support/kubernetes.js';
import { testConfig } from '../../support/env.js';
import { metricsRegistry } from '../../../lib/metrics.js';
import { loadErpApiCredentials } from '../../../domain/erp/api-user.js';
import { runTenantAction } from '../../../domain/tenants/operator-actions.js';

interface KubeObject {
  metadata: { uid?: string; ownerReferences?: unknown[]; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

const scope = controllerScope();
let p: TenantPlatform;
let controller: TenantController;

beforeAll(async () => {
  // a short soak period, so a deletion completes within the test
  p = await startTenantPlatform({ ...scope.env, TENANT_SOAK_PERIOD: '3s' });
  controller = await startTenantController(p.cfg, { identity: 'controller-a' });
});

afterAll(async () => {
  await controller?.close();
  await p?.close();
});

const ready = (o: Parameters<typeof kubeCondition>[0]) => kubeCondition(o, 'Ready')?.status === 'True';

async function workflowRuns(name: string): Promise<number> {
  let n = 0;
  for await (const _ of p.temporal.workflow.list({ query: `WorkflowId = '${tenantWorkflowId(name)}'` })) n++;
  return n;
}

describe('the TenantClient controller', () => {
  it('provisions a TenantClient applied with kubectl and writes the workflow conditions to its status', async () => {
    const name = uniqueTenant('kube');
    expect(kube(['apply', '-f', '-'], tenantClientJson(name, scope.label)).out).toContain(
      `tenantclient.plana.dev/${name} created`,
    );
    const obj = await waitForTenantClient(name, ready);
    expect(obj?.metadata.finalizers).toContain('plana.dev/deprovision');
    expect(obj?.status).toMatchObject({
      observedGeneration: 1,
      phase: 'Ready',
      workflowId: tenantWorkflowId(name),
      temporalUiUrl: expect.stringContaining(encodeURIComponent(tenantWorkflowId(name))),
    });
    expect(kubeCondition(obj, 'Synced')).toMatchObject({ status: 'True', observedGeneration: 1 });
    expect(kubeCondition(obj, 'Ready')).toMatchObject({ status: 'True', reason: 'Available' });
    expect(obj?.status?.resources?.database).toMatchObject({ synced: 'True', state: 'Created' });
    // kubectl get shows the printer columns with the conditions
    const row = kube(['get', 'tc', name, '--no-headers']).out.trim().split(/\s+/);
    expect(row.slice(0, 5)).toEqual([name, 'True', 'True', 'starter', '18']);
    // the workflow's steps are Events on the object, with the workflow id
    await expect
      .poll(() => tenantClientEvents(name).map((e) => e.reason), { timeout: 10_000 })
      .toEqual(expect.arrayContaining(['Applied', 'ReserveSubdomain']));
    expect(tenantClientEvents(name).every((e) => e.message.includes(`workflow tenant:${name}`))).toBe(true);
    // in the order they happened, though several share one second
    await expect
      .poll(() => kube(['describe', 'tc', name]).out, { timeout: 15_000 })
      .toMatch(/Events:[\s\S]*Applied[\s\S]*ReserveSubdomain[\s\S]*CloneDatabase[\s\S]*PublishProvisionedEvent/);
    expect(await workflowRuns(name)).toBe(1);
  });

  it('goes on with every other TenantClient while one cannot be reconciled, says why on that one, and retries it with backoff', async () => {
    // an admission policy of the cluster refuses the controller's writes to two of them
    const [poison, deleted, after] = [uniqueTenant('poison'), uniqueTenant('gone'), uniqueTenant('after')];
    const probe = uniqueTenant('probe'); // not this file's: no controller touches it
    const policy = `refuse-${poison}`;
    const refusal = `refused by this test's admission policy`;
    kube(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
          {
            apiVersion: 'admissionregistration.k8s.io/v1',
            kind: 'ValidatingAdmissionPolicy',
            metadata: { name: policy },
            spec: {
              failurePolicy: 'Fail',
              matchConstraints: {
                resourceRules: [
                  {
                    apiGroups: ['plana.dev'],
                    apiVersions: ['*'],
                    operations: ['UPDATE'],
                    resources: ['tenantclients'],
                  },
                ],
              },
              validations: [
                { expression: `!(object.metadata.name in ['${poison}', '${deleted}', '${probe}'])`, message: refusal },
              ],
            },
          },
          {
            apiVersion: 'admissionregistration.k8s.io/v1',
            kind: 'ValidatingAdmissionPolicyBinding',
            metadata: { name: policy },
            spec: { policyName: policy, validationActions: ['Deny'] },
          },
        ],
      }),
    );
    const removePolicy = () => {
      kube(['delete', 'validatingadmissionpolicybinding', policy, '--ignore-not-found']);
      kube(['delete', 'validatingadmissionpolicy', policy, '--ignore-not-found']);
    };
    onTestFinished(() => {
      removePolicy();
      kube(['delete', 'tc', probe, '--ignore-not-found', '--wait=false']);
    });
    // the policy is in force once an update of the probe is refused
    kube(['apply', '-f', '-'], tenantClientJson(probe, 'plana.dev/probe=1'));
    await expect
      .poll(() => kube(['label', 'tc', probe, `try=${Date.now()}`, '--overwrite']).out, { timeout: 30_000 })
      .toContain(refusal);
    kube(['apply', '-f', '-'], tenantClientJson(poison, scope.label));
    kube(['apply', '-f', '-'], tenantClientJson(deleted, scope.label));
    kube(['apply', '-f', '-'], tenantClientJson(after, scope.label));

    const stuck = await waitForTenantClient(poison, (o) => kubeCondition(o, 'Synced')?.reason === 'ReconcileError');
    expect(kubeCondition(stuck, 'Synced')).toMatchObject({
      status: 'False',
      message: expect.stringContaining(refusal),
    });
    expect(kube(['get', 'tc', poison, '--no-headers']).out.trim().split(/\s+/).slice(1, 3)).toEqual(['False', 'False']);
    // the one applied after it is provisioned as if it were not there
    expect(ready(await waitForTenantClient(after, ready))).toBe(true);
    const warnings = tenantClientEvents(poison).filter((e) => e.reason === 'ReconcileError');
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.every((e) => e.type === 'Warning')).toBe(true);
    // retried with backoff, not every resync: a few Events, each for a failed try whose message changed
    expect(warnings.length).toBeLessThan(5);

    // the controller's metrics count the failures and the queue
    const metrics = await metricsRegistry.metrics();
    expect(metrics).toMatch(/^plana_tenant_controller_reconcile_errors_total [1-9]/m);
    expect(metrics).toMatch(/^plana_tenant_controller_reconciles_total\{result="success"\} [1-9]/m);
    expect(metrics).toMatch(/^plana_tenant_controller_queue_depth \d+/m);

    // one that keeps failing can still be deleted (nothing was created for it)
    expect(kube(['delete', 'tc', deleted, '--wait=false']).ok).toBe(true);
    await expect.poll(() => getTenantClient(deleted), { timeout: 30_000, interval: 500 }).toBeUndefined();

    // once the cluster lets the controller write it, a retry provisions it
    removePolicy();
    const fixed = await waitForTenantClient(poison, ready, 120_000);
    expect(kubeCondition(fixed, 'Synced')).toMatchObject({ status: 'True' });
    expect(await workflowRuns(poison)).toBe(1);
  }, 180_000);

  it('shows a failed chat room on the TenantClient (non-fatal), makes no Job or CronJob for it, and a retry creates the room', async () => {
    const name = uniqueTenant('room');
    await p.stopChat();
    try {
      kube(['apply', '-f', '-'], tenantClientJson(name, scope.label, { projectId: 77 }));
      const failed = await waitForTenantClient(
        name,
        (o) => ready(o) && o?.status?.resources?.chatRoom?.state === 'Failed',
      );
      expect(kubeCondition(failed, 'Synced')).toMatchObject({
        status: 'True',
        message: expect.stringContaining(`retry with \`retry chat-room ${name}\``),
      });
    } finally {
      await p.startChat();
    }
    // the platform's workflow makes the room and the backups: no object on the cluster pretends to
    for (const kind of ['job', 'cronjob'])
      expect(
        kube(['get', kind, '-n', 'plana-odoo-18', '-l', `plana.dev/tenant=${name}`, '-o', 'name']).out.trim(),
      ).toBe('');

    // §3.2's retry action (what `npm run cli -- retry chat-room` sends)
    await runTenantAction({ pool: p.pool, temporal: p.temporal, config: p.cfg }, name, 'retry-chat-room');
    await waitForTenantClient(name, (o) => o?.status?.resources?.chatRoom?.state === 'Created');
    expect(p.chatChannels().filter((c) => c.name === `support-${name}-000077`)).toHaveLength(1);
    await expect
      .poll(() => tenantClientEvents(name).some((e) => e.reason === 'EnsureChatRoom' && e.message.startsWith('ok')), {
        timeout: 10_000,
      })
      .toBe(true);
    expect(await workflowRuns(name)).toBe(1);
  });

  it('keeps the route and the API user Secret as objects owned by the TenantClient; a deleted one comes back', async () => {
    const name = uniqueTenant('objs');
    kube(['apply', '-f', '-'], tenantClientJson(name, scope.label, { tier: 'pro' }));
    const keys = ['route', 'apiUserSecret'] as const;
    const obj = await waitForTenantClient(
      name,
      (o) => ready(o) && keys.every((k) => o?.status?.objects?.[k]?.synced === 'True'),
    );
    const get = (kind: string, object: string) => {
      const r = kube(['get', kind, object, '-n', 'plana-odoo-18', '-o', 'json']);
      return r.ok ? (JSON.parse(r.out) as KubeObject) : undefined;
    };
    const owner = [
      {
        apiVersion: 'plana.dev/v1alpha1',
        kind: 'TenantClient',
        name,
        uid: obj!.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ];
    const host = obj!.status!.resources!.route!.externalName.split('/')[1];
    const ingress = get('ingress', `tenant-${name}`)!;
    expect(ingress.metadata.ownerReferences).toEqual(owner);
    expect(ingress.spec).toMatchObject({
      rules: [
        { host, http: { paths: [{ path: '/', backend: { service: { name: 'odoo', port: { number: 8069 } } } }] } },
      ],
    });
    const secret = get('secret', `erp-api-user-${name}`)!;
    expect(secret.metadata.ownerReferences).toEqual(owner);
    const stored = await loadErpApiCredentials(p.pool, p.cfg.SECRETS_KEY, name);
    const data = secret.data as Record<string, string>;
    expect(Buffer.from(data.username!, 'base64').toString()).toBe(stored!.login);
    expect(Buffer.from(data.password!, 'base64').toString()).toBe(stored!.password);
    // the password is in the Secret only: not in the status, the Events or kubectl describe
    expect(JSON.stringify(getTenantClient(name))).not.toContain(stored!.password);
    expect(JSON.stringify(tenantClientEvents(name))).not.toContain(stored!.password);
    expect(kube(['describe', 'tc', name]).out).not.toContain(stored!.password);
    expect(obj?.status?.objects?.apiUserSecret).toMatchObject({
      kind: 'Secret',
      namespace: 'plana-odoo-18',
      name: `erp-api-user-${name}`,
      uid: secret.metadata.uid,
    });

    // each deleted object is made again by the next reconcile, with an Event
    const before = { ingress: ingress.metadata.uid, secret: secret.metadata.uid };
    for (const [kind, object] of [
      ['ingress', `tenant-${name}`],
      ['secret', `erp-api-user-${name}`],
    ] as const) {
      expect(kube(['delete', kind, object, '-n', 'plana-odoo-18']).ok).toBe(true);
      await expect.poll(() => get(kind, object)?.metadata.uid, { timeout: 15_000 }).not.toBeUndefined();
      expect(get(kind, object)!.metadata.uid).not.toBe(before[kind]);
    }
    await expect
      .poll(() => tenantClientEvents(name).filter((e) => e.reason === 'ObjectRecreated').length, { timeout: 10_000 })
      .toBe(2);
    const after = await waitForTenantClient(name, (o) => o?.status?.objects?.route?.uid !== before.ingress);
    expect(after?.status?.objects?.route).toMatchObject({
      synced: 'True',
      uid: get('ingress', `tenant-${name}`)!.metadata.uid,
    });
    expect(await workflowRuns(name)).toBe(1);

    // deprovisioning removes them
    expect(kube(['delete', 'tc', name, '--wait=false']).ok).toBe(true);
    await expect.poll(() => getTenantClient(name), { timeout: 60_000, interval: 500 }).toBeUndefined();
    expect(get('ingress', `tenant-${name}`)).toBeUndefined();
    expect(get('secret', `erp-api-user-${name}`)).toBeUndefined();
  });

  it('publishes each workflow step as one Event, even when its cached object trails its own status writes', async () => {
    // a reconcile of the same cached object again (the informer has not yet seen the status the last
    // reconcile wrote, as on a busy API server): no step is published twice
    const name = uniqueTenant('once');
    const label = `${scope.label}-stale`; // no running controller selects it
    kube(['apply', '-f', '-'], tenantClientJson(name, label));
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath());
    const objectApi = KubernetesObjectApi.makeApiClient(kc);
    const log = pino({ level: 'silent' }) as never;
    const cache = new ComposedObjectCache(kc, objectApi, log, () => {});
    onTestFinished(() => cache.stop());
    const reconciler = new Reconciler(
      { pool: p.pool, temporal: p.temporal, config: p.cfg },
      kc.makeApiClient(CustomObjectsApi),
      kc.makeApiClient(CoreV1Api),
      objectApi,
      new Map(),
      log,
      'stale-cache',
      cache,
    );
    await reconciler.reconcile(getTenantClient(name)!); // the finalizer and the apply
    await reconciler.reconcile(getTenantClient(name)!);
    await waitForStatus(p, name, (s) => s.phase === 'Ready' && s.provisionedEventId !== undefined);
    // the object as a cache holds it before it sees the status writes: no status yet
    const cached = { ...getTenantClient(name)!, status: undefined };
    await reconciler.reconcile(cached);
    await reconciler.reconcile(cached);
    const reasons = tenantClientEvents(name).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['Applied', 'ReserveSubdomain', 'PublishProvisionedEvent']));
    expect(reasons.filter((r, i) => reasons.indexOf(r) !== i)).toEqual([]);
  });

  it('shows a subdomain taken elsewhere as Synced=False and creates nothing', async () => {
    const name = uniqueTenant('taken');
    await p.pool.query('INSERT INTO subdomain_reservations (subdomain, owner_uid) VALUES ($1, gen_random_uuid())', [
      name,
    ]);
    kube(['apply', '-f', '-'], tenantClientJson(name, scope.label));
    const obj = await waitForTenantClient(name, (o) => kubeCondition(o, 'Synced')?.status === 'False');
    expect(kubeCondition(obj, 'Synced')).toMatchObject({
      reason: 'ReconcileError',
      message: `subdomain "${name}" is reserved by another TenantClient`,
    });
    expect((await p.pool.query('SELECT count(*)::int AS n FROM tenants WHERE name = $1', [name])).rows[0].n).toBe(0);
  });

  it('refuses a change of the ERP version at the API server, naming the field, and keeps the tenant as it was', async () => {
    const name = uniqueTenant('erp');
    kube(['apply', '-f', '-'], tenantClientJson(name, scope.label));
    await waitForTenantClient(name, ready);
    const refused = kube(['apply', '-f', '-'], tenantClientJson(name, scope.label, { erpVersion: '19' }));
    expect(refused.ok).toBe(false);
    expect(refused.out).toContain(
      'spec.erpVersion: Invalid value: "string": cannot change from "18" to "19": an ERP upgrade is a migration, not an apply',
    );
    const obj = getTenantClient(name);
    expect(obj?.metadata.generation).toBe(1);
    expect(obj?.spec.erpVersion).toBe('18');
    expect(kubeCondition(obj, 'Ready')?.status).toBe('True');
  });

  it('deletes through the finalizer: Ready=False Deleting until deprovisioned, then the object is gone', async () => {
    const name = uniqueTenant('del');
    kube(['apply', '-f', '-'], tenantClientJson(name, scope.label));
    await waitForTenantClient(name, ready);
    expect(kube(['delete', 'tc', name, '--wait=false']).ok).toBe(true);
    const deleting = await waitForTenantClient(name, (o) => kubeCondition(o, 'Ready')?.reason === 'Deleting');
    expect(deleting?.metadata.deletionTimestamp).toBeTruthy();
    expect(kubeCondition(deleting, 'Ready')?.status).toBe('False');
    await waitForTenantClient(name, (o) => o === undefined, 60_000);
    const { rows } = await p.pool.query('SELECT phase FROM tenant_status WHERE name = $1', [name]);
    expect(rows[0]?.phase).toBe('Deprovisioned');
    expect(await workflowRuns(name)).toBe(1);
    // its chat-room Job went with it
    expect(kube(['get', 'job', `chat-room-${name}`, '-n', 'plana-odoo-18']).ok).toBe(false);

    // applied again under the same name: refused with a condition (a name is used once), nothing created
    kube(['apply', '-f', '-'], tenantClientJson(name, scope.label));
    const again = await waitForTenantClient(name, (o) => kubeCondition(o, 'Synced')?.status === 'False');
    expect(kubeCondition(again, 'Synced')?.message).toContain('is deprovisioned; a name is used once');
    expect(await workflowRuns(name)).toBe(1);
    // and deleting that one has nothing to wait for
    kube(['delete', 'tc', name, '--wait=false']);
    await waitForTenantClient(name, (o) => o === undefined, 30_000);
  });

  it('deletes a TenantClient still provisioning', async () => {
    const name = uniqueTenant('early');
    kube(['apply', '-f', '-'], tenantClientJson(name, scope.label));
    await waitForTenantClient(name, (o) => o?.status?.workflowId !== undefined);
    kube(['delete', 'tc', name, '--wait=false']);
    await waitForTenantClient(name, (o) => o === undefined, 60_000);
    const { rows } = await p.pool.query('SELECT phase FROM tenant_status WHERE name = $1', [name]);
    expect(rows[0]?.phase).toBe('Deprovisioned');
  });

  it('provisions, once, a TenantClient applied while no controller ran, and resumes a delete after a restart', async () => {
    const name = uniqueTenant('down');
    await controller.close();
    kube(['apply', '-f', '-'], tenantClientJson(name, scope.label));
    // the object is there before the new controller lists it (its first pass runs before it leads)
    controller = await startTenantController(p.cfg, { identity: 'controller-b' });
    await waitForTenantClient(name, ready);
    expect(await workflowRuns(name)).toBe(1);

    // killed between the delete's cancel and the deprovisioning: the next one removes the finalizer once
    kube(['delete', 'tc', name, '--wait=false']);
    await waitForTenantClient(name, (o) => kubeCondition(o, 'Ready')?.reason === 'Deleting');
    await controller.close();
    controller = await startTenantController(p.cfg, { identity: 'controller-c' });
    await waitForTenantClient(name, (o) => o === undefined, 60_000);
    expect(await workflowRuns(name)).toBe(1);
    // (the Event follows the finalizer's removal, so it may land just after the object is gone)
    const removals = () => tenantClientEvents(name).filter((e) => e.reason === 'FinalizerRemoved').length;
    await expect.poll(removals, { timeout: 10_000 }).toBe(1);
    await sleep(2_000); // a few more passes of the controller: still once
    expect(removals()).toBe(1);
  });

  it('elects one leader of two controllers through a Lease, and the other takes over when it stops', async () => {
    // a Lease and a selector of their own: these two never touch the TenantClients of the tests above
    const cfg = await testConfig({
      ...scope.env,
      TENANT_CONTROLLER_LEASE: `${scope.env.TENANT_CONTROLLER_LEASE}-two`,
      TENANT_CONTROLLER_LABEL_SELECTOR: `${scope.label}-two`,
    });
    const a = await startTenantController(cfg, { identity: 'replica-a' });
    const b = await startTenantController(cfg, { identity: 'replica-b' });
    try {
      await expect.poll(() => [a.isLeader(), b.isLeader()].filter(Boolean).length, { timeout: 15_000 }).toBe(1);
      const [leader, follower] = a.isLeader() ? [a, b] : [b, a];
      const holder = kube([
        'get',
        'lease',
        cfg.TENANT_CONTROLLER_LEASE,
        '-n',
        'default',
        '-o',
        'jsonpath={.spec.holderIdentity}',
      ]);
      expect(holder.out).toBe(leader === a ? 'replica-a' : 'replica-b');
      await leader.close();
      await expect.poll(() => follower.isLeader(), { timeout: 15_000 }).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
