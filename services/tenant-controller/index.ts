/**
 * The TenantClient controller: TenantClients on the Kubernetes API (tenantclients.plana.dev) drive
 * the tenant lifecycle workflow `tenant:<name>`, as a Crossplane provider drives its managed
 * resources.
 *
 * - An informer (@kubernetes/client-node's ListWatch: it resumes its watch from the last
 *   resourceVersion and lists again on 410 Gone) keeps every TenantClient in memory.
 * - A new object or a new metadata.generation is applied through the platform's one entry
 *   (domain/tenants/operator-actions.ts applyTenantClient: signal-with-start of the workflow whose id
 *   is the business key, so never a second workflow for one resource). What the schema cannot say
 *   (an immutable field changed, a name used before) is refused there and shows as Synced=False.
 * - Every resync, each TenantClient's status subresource is brought to what the workflow last
 *   mirrored (conditions with Kubernetes' observedGeneration, phase, composed resources), and each
 *   new workflow step becomes an Event on the object, with the workflow id and Temporal UI link.
 * - Deletion holds the finalizer plana.dev/deprovision: the tenant is cancelled (the soak period
 *   of §3.2 runs), Ready=False reason Deleting, and the finalizer goes once it is deprovisioned.
 * - Replicas elect one leader through a coordination.k8s.io Lease; only the leader writes.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import {
  ApiException,
  BatchV1Api,
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
import { runAsMain } from '../../lib/service-app.js';
import { connectTemporal } from '../../lib/temporal.js';
import type { OperationDeps } from '../../domain/tenants/tenant-workflow-start.js';
import { electLeader } from './leader.js';
import { ComposedObjectCache } from './object-cache.js';
import { type AppliedGeneration } from './status.js';
import { gvr, Reconciler, type TenantClientObject } from './reconciler.js';

export type { TenantClientObject } from './reconciler.js';

export interface TenantController {
  isLeader(): boolean;
  /** Runs one pass now (tests); resolves when it is done. */
  resync(): Promise<void>;
  close(): Promise<void>;
}

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
  const batch = kc.makeApiClient(BatchV1Api);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const selector = cfg.TENANT_CONTROLLER_LABEL_SELECTOR;

  const informer = watchTenantClients(kc, custom, selector, log);
  /** What was applied (or refused) per object, so a generation is applied once per controller life. */
  const applied = new Map<string, AppliedGeneration>();
  // the composed objects from informers; one deleted on the API server triggers a pass
  const cache = new ComposedObjectCache(kc, objects, log, () => void passes.trigger());
  const reconciler = new Reconciler(deps, custom, core, batch, objects, applied, log, identity, cache);

  let stopped = false;
  let closing: Promise<void> | undefined;
  const passes = serialPasses(
    async () => {
      const leading = election.isLeader();
      log.debug({ leading, objects: informer.list().length }, 'pass');
      if (leading) await reconciler.pass([...informer.list()]).catch((err) => logFailure(log, err));
    },
    () => stopped,
  );
  const election = electLeader(kc, {
    namespace: cfg.KUBERNETES_NAMESPACE,
    name: cfg.TENANT_CONTROLLER_LEASE,
    identity,
    leaseDurationMs: cfg.TENANT_CONTROLLER_LEASE_DURATION,
    log,
    onChange: (leading) => leading && passes.trigger(),
  });

  triggerOnIntentChange(informer, applied, () => void passes.trigger());
  restartOnError(informer, log, () => stopped);
  await startInformer(informer, log);
  const resync = setInterval(() => void passes.trigger(), cfg.TENANT_CONTROLLER_RESYNC);
  log.info({ identity, selector, lease: cfg.TENANT_CONTROLLER_LEASE }, 'TenantClient controller started');

  return {
    isLeader: () => election.isLeader(),
    resync: () => passes.trigger(),
    close() {
      closing ??= (async () => {
        stopped = true;
        clearInterval(resync);
        await passes.idle();
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
 * A pass for what the controller acts on (a new object, a new generation, a deletion, finalizers,
 * labels); not for a status change: those are its own writes, and a pass for each would make every
 * burst of status writes a burst of passes over every object.
 */
function triggerOnIntentChange(
  informer: ReturnType<typeof watchTenantClients>,
  applied: Map<string, AppliedGeneration>,
  trigger: () => void,
) {
  const intents = new Map<string, string>();
  const onChange = (obj: TenantClientObject) => {
    const intent = intentOf(obj);
    if (intents.get(obj.metadata.uid) === intent) return;
    intents.set(obj.metadata.uid, intent);
    trigger();
  };
  informer.on('add', onChange);
  informer.on('update', onChange);
  informer.on('delete', (obj) => {
    intents.delete(obj.metadata.uid);
    applied.delete(obj.metadata.name);
  });
}

/** What of a TenantClient the controller acts on: its spec (generation), deletion, finalizers and labels. */
function intentOf({ metadata }: TenantClientObject): string {
  return JSON.stringify([metadata.generation, metadata.deletionTimestamp, metadata.finalizers, metadata.labels]);
}

/** One pass at a time; a trigger during a pass runs another after it. */
function serialPasses(pass: () => Promise<void>, isStopped: () => boolean) {
  let running: Promise<void> | undefined;
  let again = false;
  function trigger(): Promise<void> {
    if (isStopped()) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      // yield first: a pass with nothing to await would otherwise finish before `running` is set
      await Promise.resolve();
      do {
        again = false;
        await pass();
      } while (again && !isStopped());
      running = undefined;
    })();
    return running;
  }
  return { trigger, idle: () => running ?? Promise.resolve() };
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

function logFailure(log: Logger, err: unknown) {
  log.warn(
    { err: err instanceof ApiException ? `${err.code} ${String(err.body)}` : (err as Error).message },
    'pass failed',
  );
}

await runAsMain(import.meta.url, () => startTenantController());
