/**
 * The composed objects (the route's Ingress, the API user's Secret) as the controller last saw them: one informer (a list, then a watch from its
 * resourceVersion, again on 410 Gone) per kind and version namespace, as client-go's shared
 * informers do. A pass reads its objects from memory instead of a GET per object per tenant per
 * reconcile; one deleted is reported by the watch, which queues its TenantClient (so it comes back at once).
 *
 * Only objects labelled `plana.dev/tenant` are kept. An object this controller has just made is
 * served until the watch has it (at most OVERLAY_MS), so a pass does not make it twice. While an
 * informer is not in step with the API server (its first list, a watch that failed and restarts),
 * reads go to the API server with a GET.
 */
import {
  ApiException,
  makeInformer,
  type KubeConfig,
  type KubernetesObject,
  type KubernetesObjectApi,
} from '@kubernetes/client-node';
import type { Logger } from '../../lib/logger.js';

/** What a composed object is and where: enough to read it. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

/** The REST plural of each composed kind (the watch's path). */
const PLURALS: Record<string, string> = { Ingress: 'ingresses', Secret: 'secrets' };
const SELECTOR = 'plana.dev/tenant';
const FIELD_MANAGER = 'tenant-controller';
/** How long an object this controller made is served while the watch has not reported it yet. */
const OVERLAY_MS = 60_000;
/** A watch that failed is started again after this long. */
const RESTART_MS = 1_000;

type Informer = ReturnType<typeof makeInformer<KubernetesObject>>;

interface Watched {
  informer: Informer;
  /** True while the cache follows the API server (after its list, until a watch error). */
  inStep: boolean;
  started: Promise<void>;
  /** Errors reported so far (a start after which none came is in step). */
  errors: number;
  restartPending: boolean;
}

export class ComposedObjectCache {
  private readonly watched = new Map<string, Watched>();
  /** Objects this controller made (by kind/namespace/name), until the watch reports them. */
  private readonly made = new Map<string, { object: KubernetesObject; at: number }>();
  private stopped = false;

  constructor(
    private readonly kc: KubeConfig,
    private readonly api: KubernetesObjectApi,
    private readonly log: Logger,
    /** Called with the owning TenantClient's name when an object goes on the API server (it is reconciled). */
    private readonly onDelete: (tenant: string) => void,
  ) {}

  /** The object, from the cache when it is in step, else from the API server; undefined when absent. */
  async read(ref: ObjectRef): Promise<KubernetesObject | undefined> {
    const watched = this.watch(ref);
    await watched.started.catch(() => undefined);
    if (!watched.inStep) return readIfPresent(this.api, ref);
    const key = objectKey(ref);
    const cached = watched.informer.get(ref.name, ref.namespace);
    if (cached) {
      this.made.delete(key);
      return cached;
    }
    const made = this.made.get(key);
    if (made && Date.now() - made.at < OVERLAY_MS) return made.object;
    this.made.delete(key);
    return undefined;
  }

  /** The object this controller has just created or replaced: served until the watch reports it. */
  noteMade(ref: ObjectRef, object: KubernetesObject): void {
    this.made.set(objectKey(ref), { object, at: Date.now() });
  }

  /**
   * Creates the object (one already there, made a moment ago and not in the cache yet, is read
   * instead) and serves it until the watch reports it.
   */
  async create(ref: ObjectRef, body: KubernetesObject): Promise<KubernetesObject> {
    let made: KubernetesObject;
    try {
      made = await this.api.create(body, undefined, undefined, FIELD_MANAGER);
    } catch (err) {
      if (!(err instanceof ApiException && err.code === 409)) throw err;
      const existing = await readIfPresent(this.api, ref);
      if (!existing) throw err;
      made = existing;
    }
    this.noteMade(ref, made);
    return made;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.watched.values()].map((w) => w.informer.stop().catch(() => undefined)));
  }

  private watch(ref: ObjectRef): Watched {
    const id = `${ref.apiVersion}/${ref.kind}/${ref.namespace}`;
    const known = this.watched.get(id);
    if (known) return known;
    const plural = PLURALS[ref.kind];
    if (!plural) throw new Error(`no informer for kind ${ref.kind}`);
    const group = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
    const informer = makeInformer<KubernetesObject>(
      this.kc,
      `${group}/namespaces/${ref.namespace}/${plural}`,
      () =>
        this.api.list(ref.apiVersion, ref.kind, ref.namespace, undefined, undefined, undefined, undefined, SELECTOR),
      SELECTOR,
    );
    const watched: Watched = { informer, inStep: false, started: Promise.resolve(), errors: 0, restartPending: false };
    const forget = (o: KubernetesObject) => this.made.delete(objectKey({ ...ref, name: o.metadata?.name ?? '' }));
    informer.on('add', forget);
    informer.on('update', forget);
    informer.on('delete', (o) => {
      forget(o);
      const tenant = o.metadata?.labels?.[SELECTOR];
      if (tenant) this.onDelete(tenant);
    });
    // a failed list or watch (the API server away, no list permission): GETs meanwhile, started again
    informer.on('error', (err: unknown) => this.failed(watched, id, err));
    this.watched.set(id, watched);
    this.start(watched, id);
    return watched;
  }

  private start(watched: Watched, id: string): void {
    watched.restartPending = false;
    if (this.stopped) return;
    const errors = watched.errors;
    watched.started = watched.informer.start().then(
      () => {
        // (a failed list reports an error and still resolves)
        if (watched.errors === errors) watched.inStep = true;
      },
      (err: unknown) => this.failed(watched, id, err),
    );
  }

  private failed(watched: Watched, id: string, err: unknown): void {
    watched.errors++;
    watched.inStep = false;
    if (this.stopped || watched.restartPending) return; // stopping aborts the watch, which reports itself as an error
    this.log.warn(
      { err: (err as Error)?.message ?? String(err), watch: id },
      'composed objects watch failed; restarting it',
    );
    watched.restartPending = true;
    setTimeout(() => this.start(watched, id), RESTART_MS);
  }
}

const objectKey = (ref: ObjectRef) => `${ref.apiVersion}/${ref.kind}/${ref.namespace}/${ref.name}`;

/** One GET; undefined on 404. */
export async function readIfPresent(api: KubernetesObjectApi, ref: ObjectRef): Promise<KubernetesObject | undefined> {
  try {
    return await api.read({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { namespace: ref.namespace, name: ref.name },
    });
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return undefined;
    throw err;
  }
}
