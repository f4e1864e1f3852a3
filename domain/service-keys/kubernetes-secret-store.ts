/**
 * The production secret store (SECRET_STORE=kubernetes): service keys in Kubernetes Secrets.
 *
 * Layout. One Secret per caller by default (KUBERNETES_SECRET_NAME `plana-service-keys-{caller}`,
 * so a service mounts only its own keys; a name without `{caller}` puts every pair in one Secret).
 * Per caller → target pair two data keys, each a JSON document `{ keyId, key, version, createdAt }`:
 *   `<caller>.<target>`       the current version (what consumers send)
 *   `<caller>.<target>.next`  the other version: the pending one during a rotation, the previous one
 *                             after the switch (so a roll-back is one more switch)
 *
 * Consumer side (KubernetesSecretVolume, a SecretStore): reads `<SECRETS_MOUNT_DIR>/<caller>.<target>`
 * from the Secret mounted as a volume. The kubelet writes a volume atomically: the files live in a
 * timestamped directory `..<timestamp>`, `..data` is a symlink to it, swapped by rename on every
 * update, and the visible files are symlinks through `..data`. Reads are cached for the TTL
 * (SERVICE_KEY_SECRET_TTL_MS, as PgSecretStore); a change of `..data` (fs.watch on the directory, and
 * a periodic readlink as a fallback, since watches can miss events on some volume drivers) drops
 * the cache, so a new current version is used without a restart.
 *
 * Writer side (KubernetesSecretWriter, what the rotation uses through KubernetesPublishingStore in
 * secret-store-factory.ts): GET and PATCH (JSON merge patch carrying metadata.resourceVersion, so a
 * concurrent writer gets 409 and we re-read and retry) of /api/v1/namespaces/{ns}/secrets/{name}
 * over HTTP(S), with the service account's bearer token (re-read per request: projected tokens are
 * rotated by the kubelet) and its ca.crt for https. No key is ever logged or put in an error: error
 * messages carry the HTTP status, the Status reason and the Secret's name only.
 */
import { readFileSync, readlinkSync, watch, type FSWatcher } from 'node:fs';
import { readFile, readlink } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { AppError } from '../../lib/errors.js';
import type { SecretStore, SecretStoreWriter, ServiceKeySecret } from './secret-store.js';

/** What one data key of the Secret (one file of the volume) holds. */
interface StoredVersion {
  keyId: string;
  key: string;
  version: number;
  createdAt: string;
}

export const secretDataKey = (caller: string, target: string) => `${caller}.${target}`;
const nextDataKey = (caller: string, target: string) => `${secretDataKey(caller, target)}.next`;

function parseVersion(raw: string | undefined): StoredVersion | undefined {
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<StoredVersion>;
    if (typeof v.key === 'string' && typeof v.keyId === 'string' && Number.isInteger(v.version)) {
      return {
        key: v.key,
        keyId: v.keyId,
        version: v.version!,
        createdAt: typeof v.createdAt === 'string' ? v.createdAt : new Date(0).toISOString(),
      };
    }
  } catch {
    // fall through: the content is never echoed (it may hold a key)
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Consumer side: the mounted volume
// ---------------------------------------------------------------------------------------------

export interface VolumeOptions {
  /** The directory the Secret is mounted at (SECRETS_MOUNT_DIR). */
  dir: string;
  /** Cache lifetime of a read (SERVICE_KEY_SECRET_TTL_MS). */
  ttlMs?: number;
  /** Fallback check of `..data` (SECRETS_MOUNT_POLL_MS). */
  pollMs?: number;
}

export class KubernetesSecretVolume implements SecretStore {
  private cache = new Map<string, { value: ServiceKeySecret; until: number }>();
  private dataTarget: string | undefined;
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly dir: string;
  private readonly ttlMs: number;

  constructor(opts: VolumeOptions) {
    this.dir = opts.dir;
    this.ttlMs = opts.ttlMs ?? 5_000;
    this.dataTarget = this.readDataLinkSync();
    this.watch();
    this.timer = setInterval(() => void this.check(), opts.pollMs ?? 2_000);
    this.timer.unref();
  }

  async current(caller: string, target: string): Promise<ServiceKeySecret> {
    const slot = secretDataKey(caller, target);
    const hit = this.cache.get(slot);
    if (hit && hit.until > Date.now()) return hit.value;
    const file = path.join(this.dir, slot);
    let raw: string;
    try {
      raw = await readFile(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new AppError(
        'UNAVAILABLE',
        `No service key for ${caller} → ${target} in the mounted Secret (${file}: ${code ?? 'unreadable'}).`,
      );
    }
    const stored = parseVersion(raw);
    if (!stored)
      throw new AppError(
        'UNAVAILABLE',
        `The mounted service key for ${caller} → ${target} (${file}) is not a {keyId, key, version} document.`,
      );
    const value = { key: stored.key, keyId: stored.keyId, version: stored.version };
    this.cache.set(slot, { value, until: Date.now() + this.ttlMs });
    return value;
  }

  invalidate() {
    this.cache.clear();
  }

  /** Stops watching (tests, shutdown). */
  close() {
    this.watcher?.close();
    if (this.timer) clearInterval(this.timer);
  }

  private watch() {
    try {
      // the kubelet's swap is a rename of `..data` inside the directory: an event on the directory
      this.watcher = watch(this.dir, { persistent: false }, () => void this.check());
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined; // the periodic check carries on
      });
    } catch {
      this.watcher = undefined; // not mounted yet: the periodic check notices when it appears
    }
  }

  /** Drops the cache when `..data` points somewhere new (a new version of the Secret). */
  private async check() {
    let now: string | undefined;
    try {
      now = await readlink(path.join(this.dir, '..data'));
    } catch {
      now = undefined;
    }
    if (now !== this.dataTarget) {
      this.dataTarget = now;
      this.invalidate();
      if (!this.watcher) this.watch();
    }
  }

  private readDataLinkSync(): string | undefined {
    try {
      return readlinkSync(path.join(this.dir, '..data'));
    } catch {
      return undefined;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Writer side: the Kubernetes API
// ---------------------------------------------------------------------------------------------

export interface KubernetesApiOptions {
  /** `https://<KUBERNETES_SERVICE_HOST>:<KUBERNETES_SERVICE_PORT>` in a cluster, or KUBERNETES_API_URL. */
  apiUrl: string;
  namespace: string;
  /** Secret name; `{caller}` is replaced by the pair's caller. */
  secretName: string;
  /** The service-account token (`/var/run/secrets/kubernetes.io/serviceaccount/token`). */
  tokenFile: string;
  /** The cluster CA (`…/serviceaccount/ca.crt`), used for https. */
  caFile?: string;
  timeoutMs?: number;
}

interface SecretObject {
  kind: 'Secret';
  apiVersion: 'v1';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  type?: string;
  data?: Record<string, string>;
}

interface KubeStatus {
  kind?: string;
  reason?: string;
  message?: string;
  code?: number;
}

class KubernetesApiError extends AppError {
  constructor(
    readonly httpStatus: number,
    readonly reason: string,
    message: string,
  ) {
    super(httpStatus === 404 ? 'NOT_FOUND' : httpStatus === 409 ? 'CONFLICT' : 'UNAVAILABLE', message, {
      kubernetesStatus: httpStatus,
      reason,
    });
  }
}

export class KubernetesSecretWriter implements SecretStoreWriter {
  private readonly api: URL;
  private ca: Buffer | undefined;

  constructor(private readonly opts: KubernetesApiOptions) {
    this.api = new URL(opts.apiUrl);
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
      const cur = parseVersion(data[secretDataKey(caller, target)]);
      const next = parseVersion(data[nextDataKey(caller, target)]);
      stored = Math.max(cur?.version ?? 0, next?.version ?? 0) + 1;
      return placeVersion(
        caller,
        target,
        cur,
        { ...secret, version: stored, createdAt: new Date().toISOString() },
        makeCurrent,
      );
    });
    return stored;
  }

  /**
   * Idempotent: makes sure `secret.version` is in the Secret (as `.next`, or as current when
   * `makeCurrent`). What KubernetesPublishingStore calls with a version PostgreSQL recorded.
   */
  async publish(caller: string, target: string, secret: ServiceKeySecret, makeCurrent: boolean): Promise<void> {
    await this.mutate(caller, (data) => {
      const cur = parseVersion(data[secretDataKey(caller, target)]);
      const next = parseVersion(data[nextDataKey(caller, target)]);
      const same = (v: StoredVersion | undefined) => v?.version === secret.version && v.keyId === secret.keyId;
      if (same(cur)) return null;
      if (same(next)) return makeCurrent ? swap(caller, target, cur, next!) : null;
      return placeVersion(caller, target, cur, { ...secret, createdAt: new Date().toISOString() }, makeCurrent);
    });
  }

  /** Switches to `version` (held as current or `.next`); the other one stays as `.next` for a roll-back. Idempotent. */
  async makeCurrent(caller: string, target: string, version: number): Promise<void> {
    await this.mutate(caller, (data) => {
      const cur = parseVersion(data[secretDataKey(caller, target)]);
      const next = parseVersion(data[nextDataKey(caller, target)]);
      if (cur?.version === version) return null;
      if (next?.version !== version) {
        throw new AppError(
          'NOT_FOUND',
          `No version ${version} of the ${caller} → ${target} key in Secret ${this.opts.namespace}/${this.secretNameFor(caller)}.`,
        );
      }
      return swap(caller, target, cur, next);
    });
  }

  async versions(caller: string, target: string) {
    const { data } = await this.read(caller);
    const out: { version: number; keyId: string; isCurrent: boolean; createdAt: Date }[] = [];
    for (const [dataKey, isCurrent] of [
      [secretDataKey(caller, target), true],
      [nextDataKey(caller, target), false],
    ] as const) {
      const v = parseVersion(data[dataKey]);
      if (v) out.push({ version: v.version, keyId: v.keyId, isCurrent, createdAt: new Date(v.createdAt) });
    }
    return out.sort((a, b) => b.version - a.version);
  }

  /** Read-modify-write with optimistic concurrency: a 409 (someone else wrote in between) re-reads. */
  private async mutate(
    caller: string,
    change: (data: Record<string, string>) => Record<string, string | null> | null,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const { exists, resourceVersion, data } = await this.read(caller);
      const patch = change(data);
      if (!patch) return;
      const encoded = Object.fromEntries(
        Object.entries(patch).map(([k, v]) => [k, v === null ? null : Buffer.from(v, 'utf8').toString('base64')]),
      );
      try {
        if (exists) {
          await this.request(
            'PATCH',
            this.secretPath(caller),
            { metadata: { resourceVersion }, data: encoded },
            'application/merge-patch+json',
          );
        } else {
          const name = this.secretNameFor(caller);
          const data = Object.fromEntries(Object.entries(encoded).filter((e): e is [string, string] => e[1] !== null));
          await this.request('POST', `/api/v1/namespaces/${encodeURIComponent(this.opts.namespace)}/secrets`, {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: {
              name,
              namespace: this.opts.namespace,
              labels: { 'app.kubernetes.io/part-of': 'plana', 'plana.dev/secret': 'service-keys' },
            },
            type: 'Opaque',
            data,
          });
        }
        return;
      } catch (err) {
        const retry = err instanceof KubernetesApiError && err.httpStatus === 409 && attempt < 5;
        if (!retry) throw err;
      }
    }
  }

  private async read(
    caller: string,
  ): Promise<{ exists: boolean; resourceVersion?: string; data: Record<string, string> }> {
    try {
      const secret = (await this.request('GET', this.secretPath(caller))) as SecretObject;
      const data: Record<string, string> = {};
      for (const [k, v] of Object.entries(secret.data ?? {})) data[k] = Buffer.from(v, 'base64').toString('utf8');
      return { exists: true, resourceVersion: secret.metadata.resourceVersion, data };
    } catch (err) {
      if (err instanceof KubernetesApiError && err.httpStatus === 404) return { exists: false, data: {} };
      throw err;
    }
  }

  private secretPath(caller: string) {
    return `/api/v1/namespaces/${encodeURIComponent(this.opts.namespace)}/secrets/${encodeURIComponent(this.secretNameFor(caller))}`;
  }

  private token(): string {
    try {
      return readFileSync(this.opts.tokenFile, 'utf8').trim();
    } catch (err) {
      throw new AppError(
        'UNAVAILABLE',
        `Cannot read the Kubernetes service-account token at ${this.opts.tokenFile} (${(err as NodeJS.ErrnoException).code ?? 'error'}).`,
      );
    }
  }

  private caCert(): Buffer | undefined {
    if (this.api.protocol !== 'https:' || !this.opts.caFile) return undefined;
    try {
      this.ca ??= readFileSync(this.opts.caFile);
      return this.ca;
    } catch (err) {
      throw new AppError(
        'UNAVAILABLE',
        `Cannot read the Kubernetes CA certificate at ${this.opts.caFile} (${(err as NodeJS.ErrnoException).code ?? 'error'}).`,
      );
    }
  }

  private request(method: string, apiPath: string, body?: unknown, contentType = 'application/json'): Promise<unknown> {
    const url = new URL(apiPath, this.api);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const what = `${method} ${url.pathname}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.token()}`, accept: 'application/json' };
    if (payload) Object.assign(headers, { 'content-type': contentType, 'content-length': String(payload.length) });
    const transport = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = transport.request(
        url,
        { method, headers, ca: this.caCert(), timeout: this.opts.timeoutMs ?? 10_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', () => reject(new AppError('UNAVAILABLE', `Kubernetes API ${what}: the answer broke off.`)));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            let json: unknown;
            try {
              json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              json = undefined;
            }
            if (status >= 200 && status < 300) return resolve(json);
            reject(this.apiError(what, status, json as KubeStatus | undefined));
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err) =>
        reject(
          new AppError(
            'UNAVAILABLE',
            `Kubernetes API ${what} at ${url.origin} failed: ${(err as NodeJS.ErrnoException).code ?? err.message}.`,
          ),
        ),
      );
      req.end(payload);
    });
  }

  /** A clear error from a Kubernetes Status body: status, reason and a hint; never anything we sent. */
  private apiError(what: string, status: number, body: KubeStatus | undefined): KubernetesApiError {
    const reason = body?.reason || String(status);
    const name = `${this.opts.namespace}/${what.split('/').at(-1) ?? ''}`;
    const hint =
      status === 401
        ? `: the service-account token (${this.opts.tokenFile}) was refused; is it current and for this cluster?`
        : status === 403
          ? `: the service account may not ${what.split(' ')[0]} Secret ${name} (RBAC: get, create, patch on secrets).`
          : status === 409
            ? ': the Secret changed in between.'
            : status === 404
              ? `: Secret or namespace not found.`
              : '.';
    return new KubernetesApiError(status, reason, `Kubernetes API ${what} answered ${status} ${reason}${hint}`);
  }
}

function placeVersion(
  caller: string,
  target: string,
  cur: StoredVersion | undefined,
  v: StoredVersion,
  makeCurrent: boolean,
) {
  if (!makeCurrent) return { [nextDataKey(caller, target)]: JSON.stringify(v) };
  return {
    [secretDataKey(caller, target)]: JSON.stringify(v),
    [nextDataKey(caller, target)]: cur ? JSON.stringify(cur) : null,
  };
}

function swap(caller: string, target: string, cur: StoredVersion | undefined, next: StoredVersion) {
  return {
    [secretDataKey(caller, target)]: JSON.stringify(next),
    [nextDataKey(caller, target)]: cur ? JSON.stringify(cur) : null,
  };
}
