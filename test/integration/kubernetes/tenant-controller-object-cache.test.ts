/**
 * The controller's composed objects come from informers (services/tenant-controller/object-cache.ts):
 * a reconcile of a Ready tenant reads none of its four objects from the API server, and one deleted
 * there is reported by the watch, so the next reconcile makes it again. Reconciles are run by hand on
 * a TenantClient that no running controller selects, through API clients that count their reads.
 */
import { CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Reconciler } from '../../../services/tenant-controller/reconciler.js';
import { ComposedObjectCache } from '../../../services/tenant-controller/object-cache.js';
import {
  isReady,
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
  tenantClientJson,
} from '../../support/kubernetes.js';

const scope = controllerScope();
const composed = ['route', 'apiUserSecret'] as const;
let p: TenantPlatform;
let cache: ComposedObjectCache;
let reconciler: Reconciler;
/** GETs of composed objects the reconciles made, the watch's reports of a deletion. */
const counts = { reads: 0, changes: 0 };

beforeAll(async () => {
  p = await startTenantPlatform({ ...scope.env });
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath());
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const read = objects.read.bind(objects);
  objects.read = ((...args: Parameters<typeof read>) => {
    counts.reads++;
    return read(...args);
  }) as typeof objects.read;
  const log = pino({ level: 'silent' }) as never;
  cache = new ComposedObjectCache(kc, objects, log, () => counts.changes++);
  reconciler = new Reconciler(
    { pool: p.pool, temporal: p.temporal, config: p.cfg },
    kc.makeApiClient(CustomObjectsApi),
    kc.makeApiClient(CoreV1Api),
    objects,
    new Map(),
    log,
    'object-cache',
    cache,
  );
});

afterAll(async () => {
  await cache?.stop();
  await p?.close();
});

const ingressUid = (name: string) => {
  const r = kube(['get', 'ingress', `tenant-${name}`, '-n', 'plana-odoo-18', '-o', 'jsonpath={.metadata.uid}']);
  return r.ok ? r.out.trim() : undefined;
};

it('reads a Ready tenant’s composed objects from its informers, and makes one deleted again once the watch reports it', async () => {
  const name = uniqueTenant('cache');
  kube(['apply', '-f', '-'], tenantClientJson(name, `${scope.label}-cache`)); // no running controller selects it
  const pass = () => reconciler.reconcile(getTenantClient(name)!);
  const inPlace = () => {
    const o = getTenantClient(name);
    return (
      kubeCondition(o, 'Ready')?.status === 'True' && composed.every((k) => o?.status?.objects?.[k]?.synced === 'True')
    );
  };
  await expect.poll(async () => (await pass(), inPlace()), { timeout: 90_000, interval: 300 }).toBe(true);

  // steady state (the workflow has written its last status): reconciles read the objects from memory
  await waitForStatus(p, name, (s) => isReady(s) && s.provisionedEventId !== undefined);
  await pass(); // (one more, so the watch has reported the objects the last reconciles made)
  counts.reads = 0;
  for (let i = 0; i < 5; i++) await pass();
  expect(counts.reads).toBe(0);

  // deleted on the API server: the watch says so, and the next reconcile makes it again
  const before = ingressUid(name);
  const changes = counts.changes;
  expect(kube(['delete', 'ingress', `tenant-${name}`, '-n', 'plana-odoo-18']).ok).toBe(true);
  await expect.poll(() => counts.changes, { timeout: 10_000 }).toBeGreaterThan(changes);
  await pass();
  expect(ingressUid(name)).toBeDefined();
  expect(ingressUid(name)).not.toBe(before);
  expect(counts.reads).toBe(0);
}, 120_000);
