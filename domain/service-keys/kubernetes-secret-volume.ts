/**
 * The consumer side of SECRET_STORE=kubernetes: a caller reads `<SECRETS_MOUNT_DIR>/<caller>.<target>`
 * from its Secret mounted as a volume (kubernetes-secret-layout.ts), so consumers need no access to
 * the Kubernetes API and keep their keys while it is unreachable. The kubelet writes a volume
 * atomically: the files live in a timestamped directory `..<timestamp>`, `..data` is a symlink to
 * it, swapped by rename on every update, and the visible files are symlinks through `..data`. Reads
 * are cached for the TTL (SERVICE_KEY_SECRET_TTL_MS, as PgSecretStore); a change of `..data`
 * (fs.watch on the directory, and a periodic readlink as a fallback, since watches can miss events
 * on some volume drivers) drops the cache, so a new current version is used without a restart; a
 * read the swap overtook is answered but not cached (it may hold the old version).
 */
import { readlinkSync, watch, type FSWatcher } from 'node:fs';
import { readFile, readlink } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../lib/errors.js';
import { parseVersion, secretDataKey } from './kubernetes-secret-layout.js';
import type { SecretStore, ServiceKeySecret } from './secret-store.js';

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
  /** Counts invalidations: a read that an invalidation overtook must not be cached (it may be the old version). */
  private generation = 0;
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
    const generation = this.generation;
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
    if (generation === this.generation) this.cache.set(slot, { value, until: Date.now() + this.ttlMs });
    return value;
  }

  invalidate() {
    this.generation++;
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
