/**
 * The writer side of SECRET_STORE=kubernetes (what the rotation and the bootstrap use through
 * KubernetesPublishingStore in secret-store-factory.ts): the Secrets of kubernetes-secret-layout.ts
 * in KUBERNETES_NAMESPACE, on the Kubernetes API through @kubernetes/client-node with the
 * credentials of lib/kube-config.ts. Every change is a read-modify-write: GET, then a JSON merge
 * patch carrying the read metadata.resourceVersion (a concurrent writer gets 409 Conflict, and we
 * re-read and retry), or a create when the Secret does not exist yet. No key is ever logged or put
 * in an error: messages carry the HTTP status, the Status reason and the Secret's name only.
 */
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
  type V1Secret,
} from '@kubernetes/client-node';
// the client's own Observable stand-in (not re-exported by its index)
import { of } from '@kubernetes/client-node/dist/gen/rxjsStub.js';
import { AppError } from '../../lib/errors.js';
import type { KubeCredentials } from '../../lib/kube-config.js';
import { kubernetesApiError, KubernetesApiError, type SecretCall } from './kubernetes-api-errors.js';
import { pairVersions, placeVersion, swap, type DataChange, type StoredVersion } from './kubernetes-secret-layout.js';
import type { SecretStoreWriter, ServiceKeySecret } from './secret-store.js';

export interface KubernetesWriterOptions {
  credentials: KubeCredentials;
  namespace: string;
  /** Secret name; `{caller}` is replaced by the pair's caller. */
  secretName: string;
  /** Each call gives up after this long (a hung API server must not hold a rotation step): 10 s. */
  timeoutMs?: number;
}

const SECRET_LABELS = { 'app.kubernetes.io/part-of': 'plana', 'plana.dev/secret': 'service-keys' };
const MAX_ATTEMPTS = 5;

interface ReadSecret {
  exists: boolean;
  resourceVersion?: string;
  data: Record<string, string>;
}

export class KubernetesSecretWriter implements SecretStoreWriter {
  private readonly api: CoreV1Api;
  private readonly timeoutMs: number;

  constructor(private readonly opts: KubernetesWriterOptions) {
    this.api = opts.credentials.kubeConfig.makeApiClient(CoreV1Api);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  secretNameFor(caller: string): string {
    return this.opts.secretName.replaceAll('{caller}', caller);
  }

  /** Stores a new version: the current one when `makeCurrent` (the old current is kept as `.next`), else the `.next` one. */
  async put(
    caller: string,
    target: string,
    secret: { key: string; keyId: string },
    makeCurrent: boolean,
  ): Promise<number> {
    let stored = 0;
    await this.mutate(caller, (data) => {
      const { current, next } = pairVersions(data, caller, target);
      stored = Math.max(current?.version ?? 0, next?.version ?? 0) + 1;
      const version = { ...secret, version: stored, createdAt: new Date().toISOString() };
      return placeVersion(caller, target, current, version, makeCurrent);
    });
    return stored;
  }

  /**
   * Idempotent: makes sure `secret.version` is in the Secret (as `.next`, or as current when
   * `makeCurrent`). What KubernetesPublishingStore calls with a version PostgreSQL recorded.
   */
  async publish(caller: string, target: string, secret: ServiceKeySecret, makeCurrent: boolean): Promise<void> {
    await this.mutate(caller, (data) => {
      const { current, next } = pairVersions(data, caller, target);
      const same = (v: StoredVersion | undefined) => v?.version === secret.version && v.keyId === secret.keyId;
      if (same(current)) return null;
      if (same(next)) return makeCurrent ? swap(caller, target, current, next!) : null;
      return placeVersion(caller, target, current, { ...secret, createdAt: new Date().toISOString() }, makeCurrent);
    });
  }

  /** Switches to `version` (held as current or `.next`); the other one stays as `.next` for a roll-back. Idempotent. */
  async makeCurrent(caller: string, target: string, version: number): Promise<void> {
    await this.mutate(caller, (data) => {
      const { current, next } = pairVersions(data, caller, target);
      if (current?.version === version) return null;
      if (next?.version !== version) {
        throw new AppError(
          'NOT_FOUND',
          `No version ${version} of the ${caller} → ${target} key in Secret ${this.opts.namespace}/${this.secretNameFor(caller)}.`,
        );
      }
      return swap(caller, target, current, next);
    });
  }

  async versions(caller: string, target: string) {
    const { current, next } = pairVersions((await this.read(caller)).data, caller, target);
    const out: { version: number; keyId: string; isCurrent: boolean; createdAt: Date }[] = [];
    for (const [v, isCurrent] of [
      [current, true],
      [next, false],
    ] as const) {
      if (v) out.push({ version: v.version, keyId: v.keyId, isCurrent, createdAt: new Date(v.createdAt) });
    }
    return out.sort((a, b) => b.version - a.version);
  }

  /** Read-modify-write with optimistic concurrency: a 409 (someone else wrote in between) re-reads. */
  private async mutate(caller: string, change: (data: Record<string, string>) => DataChange | null): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const read = await this.read(caller);
      const patch = change(read.data);
      if (!patch) return;
      try {
        await this.write(caller, read, encode(patch));
        return;
      } catch (err) {
        const conflict = err instanceof KubernetesApiError && err.httpStatus === 409;
        if (!conflict || attempt >= MAX_ATTEMPTS) throw err;
      }
    }
  }

  private async write(caller: string, read: ReadSecret, data: Record<string, string | null>) {
    const name = this.secretNameFor(caller);
    const { namespace } = this.opts;
    if (read.exists) {
      const body = { metadata: { resourceVersion: read.resourceVersion }, data };
      const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch, this.withTimeout());
      await this.call('patch', caller, () => this.api.patchNamespacedSecret({ name, namespace, body }, merge));
      return;
    }
    const created: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, labels: SECRET_LABELS },
      type: 'Opaque',
      data: Object.fromEntries(Object.entries(data).filter((e): e is [string, string] => e[1] !== null)),
    };
    await this.call('create', caller, () =>
      this.api.createNamespacedSecret({ namespace, body: created }, this.withTimeout()),
    );
  }

  private async read(caller: string): Promise<ReadSecret> {
    const name = this.secretNameFor(caller);
    try {
      const secret = await this.call('get', caller, () =>
        this.api.readNamespacedSecret({ name, namespace: this.opts.namespace }, this.withTimeout()),
      );
      const data: Record<string, string> = {};
      for (const [k, v] of Object.entries(secret.data ?? {})) data[k] = Buffer.from(v, 'base64').toString('utf8');
      return { exists: true, resourceVersion: secret.metadata?.resourceVersion, data };
    } catch (err) {
      if (err instanceof KubernetesApiError && err.httpStatus === 404) return { exists: false, data: {} };
      throw err;
    }
  }

  /** One API call; its failure as a KubernetesApiError in our terms (the client's own error may quote bodies). */
  private async call<T>(verb: SecretCall['verb'], caller: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      const what = { verb, namespace: this.opts.namespace, name: this.secretNameFor(caller) };
      throw kubernetesApiError(err, what, this.opts.credentials.source, this.timeoutMs);
    }
  }

  /** Request options that abort the call after timeoutMs (the client's middleware is observable-shaped). */
  private withTimeout(): ConfigurationOptions {
    const timeout: ObservableMiddleware = {
      pre: (request: RequestContext) => {
        request.setSignal(AbortSignal.timeout(this.timeoutMs));
        return of(request);
      },
      post: (response: ResponseContext) => of(response),
    };
    return { middleware: [timeout], middlewareMergeStrategy: 'append' };
  }
}

const encode = (patch: DataChange) =>
  Object.fromEntries(
    Object.entries(patch).map(([k, v]) => [k, v === null ? null : Buffer.from(v, 'utf8').toString('base64')]),
  );
