/**
 * The TenantClient controller: TenantClients on the Kubernetes API (tenantclients.plana.dev) drive
 * the tenant lifecycle workflow `tenant:<name>`, as a Crossplane provider drives its managed
 * resources, in controller-runtime's shape: every trigger queues a TenantClient's name, and a
 * work queue (work-queue.ts) reconciles one object at a time per name, a failing one retried with
 * its own backoff while the others go on.
 *
 * - An informer (@kubernetes/client-node's ListWatch: it resumes its watch from the last
 *   resourceVersion and lists again on 410 Gone) keeps every TenantClient in memory; a new object,
 *   a new generation, a deletion, finalizers or labels queue its name.
 * - Each status the tenant's workflow publishes (PostgreSQL's `tenant_status`) is announced
 *   (LISTEN tenant_status_writes): the name is queued, so its status and Events follow at once.
 * - A composed object deleted on the API server queues its owner (object-cache.ts); every
 *   TENANT_CONTROLLER_RESYNC all names are queued again, as a safety net.
 * - The reconcile (reconciler.ts) applies a new generation through the platform's one entry
 *   (domain/tenants/operator-actions.ts applyTenantClient), writes the status subresource and the
 *   Events, keeps the composed objects and holds the finalizer plana.dev/deprovision until the
 *   tenant is deprovisioned.
 * - Replicas elect one leader through a coordination.k8s.io Lease; only the leader reconciles.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import {
  KubernetesObjectApi,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  makeInformer,
  type KubernetesListObject,
} from '@kubernetes/client-node';
import { config as loadConfig, type Config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { kubeCredentials } from '../../lib/kube-config.js';
import { createLogger, type Logger } from '../../lib/logger.js';
import {
  tenantControllerReconcileDuration,
  tenantControllerReconcileErrors,
  tenantControllerReconciles,
  watchControllerQueue,
} from '../../lib/metrics.js';
import { runAsMain } from '../../lib/service-app.js';
import { connectTemporal } from '../../lib/temporal.js';
import type { OperationDeps } from '../../domain/tenants/operator-actions.js';
import { watchTenantStatusWrites } from '../../domain/tenants/tenant-records.js';
import { electLeader } from './leader.js';
import { ComposedObjectCache } from './object-cache.js';
import { type AppliedGeneration } from './status.js';
import { gvr, Reconciler, type TenantClientObject } from './reconciler.js';
import { WorkQueue } from './work-queue.js';

export type { TenantClientObject } from './reconciler.js';

export interface TenantController {
  isLeader(): boolean;
  /** Queues every TenantClient now (tests); resolves when the queue is idle. */
  resync(): Promise<void>;
  close(): Promise<void>;
}

/** TenantClients reconciled at once: a burst of 200 new ones is not applied one by one. */
const CONCURRENCY = 8;
/** A failed reconcile's first retry; each further failure doubles it, up to the cap. */
const RETRY_BASE_MS = 1_000;
const RETRY_MAX_MS = 5 * 60_000;

export async function startTenantController(
  cfg: Config = loadConfig(),
  opts: { identity?: string; log?: Logger } = {},
): Promise<TenantController> {
  const log = opts.log ?? createLogger({ name: 'tenant-controller', level: cfg.LOG_LEVEL });
  const identity = opts.identity ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 6)}`;
  // KUBECONFIG's credentials, else the pod's service account: the platform's one lookup
  const kc = kubeCredentials(cfg.KUBECONFIG).kubeConfig;
  const pool = createPool(cfg.DATABASE_URL, 4);
  const temporal = await connectTemporal(cfg);
  const deps: OperationDeps = { pool, temporal, config: cfg };
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const selector = cfg.TENANT_CONTROLLER_LABEL_SELECTOR;

  let stopped = false;
  let closing: Promise<void> | undefined;
  const informer = watchTenantClients(kc, custom, selector, log);
  /** What was applied (or refused) per object, so a generation is applied once per controller life. */
  const applied = new Map<string, AppliedGeneration>();
  // the composed objects from informers; one deleted on the API server queues its TenantClient
  const cache = new ComposedObjectCache(kc, objects, log, (name) => queue.add(name));
  const reconciler = new Reconciler(deps, custom, core, objects, applied, log, identity, cache);

  const queue: WorkQueue = new WorkQueue(
    async (name): Promise<void> => {
      if (!election.isLeader()) return;
      const obj = informer.get(name);
      if (!obj) return queue.forget(name);
      const done = tenantControllerReconcileDuration.startTimer();
      try {
        await reconciler.reconcile(obj);
        tenantControllerReconciles.inc({ result: 'success' });
      } catch (err) {
        tenantControllerReconciles.inc({ result: 'error' });
        tenantControllerReconcileErrors.inc();
        throw err;
      } finally {
        done();
      }
    },
    { concurrency: CONCURRENCY, baseDelayMs: RETRY_BASE_MS, maxDelayMs: RETRY_MAX_MS },
  );
  const unwatchQueue = watchControllerQueue(() => queue.depth());
  const queueAll = (how: 'add' | 'refresh') => {
    for (const obj of informer.list()) queue[how](obj.metadata.name);
  };
  const election = electLeader(kc, {
    namespace: cfg.KUBERNETES_NAMESPACE,
    name: cfg.TENANT_CONTROLLER_LEASE,
    identity,
    leaseDurationMs: cfg.TENANT_CONTROLLER_LEASE_DURATION,
    log,
    onChange: (leading) => leading && queueAll('add'),
  });

  queueOnIntentChange(informer, applied, queue);
  restartOnError(informer, log, () => stopped);
  // a notification missed while the listener reconnected is caught by queueing everything again
  const statusWrites = await watchTenantStatusWrites(cfg.DATABASE_URL, log, {
    onWrite: (name) => queue.add(name),
    onReconnect: () => queueAll('add'),
  });
  await startInformer(informer, log);
  queueAll('add');
  const resync = setInterval(() => queueAll('refresh'), cfg.TENANT_CONTROLLER_RESYNC);
  log.info({ identity, selector, lease: cfg.TENANT_CONTROLLER_LEASE }, 'TenantClient controller started');

  return {
    isLeader: () => election.isLeader(),
    resync: () => (queueAll('add'), queue.idle()),
    close() {
      closing ??= (async () => {
        stopped = true;
        clearInterval(resync);
        await queue.stop();
        unwatchQueue();
        await statusWrites.close();
        await informer.stop();
        await cache.stop();
        await election.stop();
        await temporal.connection.close();
        await pool.end();
      })();
      return closing;
    },
  };
}

/**
 * An informer on every TenantClient (of the label selector, if any). It lists once at the start,
 * then watches from the list's resourceVersion; a watch that expired (410 Gone: etcd compacted
 * past it) makes it list again, which is logged.
 */
function watchTenantClients(kc: KubeConfig, custom: CustomObjectsApi, selector: string | undefined, log: Logger) {
  let lists = 0;
  return makeInformer<TenantClientObject>(
    kc,
    `/apis/${gvr.group}/${gvr.version}/${gvr.plural}`,
    async () => {
      const list = (await custom.listClusterCustomObject({
        ...gvr,
        labelSelector: selector,
      })) as KubernetesListObject<TenantClientObject>;
      lists++;
      log.info(
        { objects: list.items.length, resourceVersion: list.metadata?.resourceVersion, relist: lists > 1 },
        lists > 1 ? 'TenantClients listed again (the watch expired)' : 'TenantClients listed',
      );
      return list;
    },
    selector,
  );
}

/**
 * Queues a TenantClient for what the controller acts on (a new object, a new generation, a deletion,
 * finalizers, labels); not for a status change: those are its own writes.
 */
function queueOnIntentChange(
  informer: ReturnType<typeof watchTenantClients>,
  applied: Map<string, AppliedGeneration>,
  queue: WorkQueue,
) {
  const intents = new Map<string, string>();
  const onChange = (obj: TenantClientObject) => {
    const intent = intentOf(obj);
    if (intents.get(obj.metadata.uid) === intent) return;
    intents.set(obj.metadata.uid, intent);
    queue.add(obj.metadata.name);
  };
  informer.on('add', onChange);
  informer.on('update', onChange);
  informer.on('delete', (obj) => {
    intents.delete(obj.metadata.uid);
    applied.delete(obj.metadata.name);
    queue.forget(obj.metadata.name);
  });
}

/** What of a TenantClient the controller acts on: its spec (generation), deletion, finalizers and labels. */
function intentOf({ metadata }: TenantClientObject): string {
  return JSON.stringify([metadata.generation, metadata.deletionTimestamp, metadata.finalizers, metadata.labels]);
}

/** The informer stops on an error it cannot resume from (the API server away): start it again. */
function restartOnError(
  informer: { on(event: 'error', cb: (err: unknown) => void): void; start(): Promise<void> },
  log: Logger,
  isStopped: () => boolean,
) {
  informer.on('error', (err: unknown) => {
    if (isStopped()) return; // stopping aborts the watch, which reports itself as an error
    log.warn({ err: (err as Error)?.message ?? String(err) }, 'TenantClient watch failed; restarting it');
    setTimeout(() => {
      if (!isStopped()) informer.start().catch((e: unknown) => log.warn({ err: String(e) }, 'restart failed'));
    }, 1_000);
  });
}

/** The first list may fail while the API server starts: keep trying, as the informer itself would. */
async function startInformer(informer: { start(): Promise<void> }, log: Logger) {
  for (let attempt = 1; ; attempt++) {
    try {
      await informer.start();
      return;
    } catch (err) {
      if (attempt >= 30) throw err;
      log.warn({ err: (err as Error).message }, 'listing TenantClients failed; retrying');
      await new Promise((r) => setTimeout(r, 1_000));
    }
  }
}

await runAsMain(import.meta.url, 'tenant-controller', () => startTenantController());
