/**
 * The one service-key check every target uses (account API, notifications, events): the target's
 * accepted keys (pending, current, previous: SHA-256 hashes only) in memory, so a check is a hash
 * and a map look-up, no I/O.
 *
 * - Fresh: LISTEN service_keys (the registry's trigger names the target on every change) reloads
 *   within milliseconds; a periodic reload (SERVICE_KEY_REFRESH_MS, 30 s) bounds staleness if a
 *   notification is lost (listener connection down; lib/db.ts listenToChannel makes it again
 *   within the same interval and reloads).
 * - Constant time: the look-up is by the hash of the given key (an attacker cannot steer a SHA-256
 *   toward a stored one), and the stored hash is then compared with timingSafeEqual.
 * - Usage: last use and count per key id in memory, written in one UPDATE every
 *   SERVICE_KEY_USAGE_FLUSH_MS (5 s), never a write per request.
 * - Revoked keys: their hashes are kept too, so a consumer still sending one (it missed a
 *   rotation) is told apart from a wrong key: 401 all the same, plus a warning and a recorded use
 *   (at most once per key id per SERVICE_KEY_MISUSE_ALERT_INTERVAL_MS) that the worker's alerter
 *   turns into an alert mail and an event (misuse.ts).
 */
import { timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import { listenToChannel, type ChannelListener } from '../../lib/db.js';
import type { Config } from '../../lib/config.js';
import type { Logger } from '../../lib/logger.js';
import { acceptedKeys, recordKeyUsage, revokedKeys, type AcceptedKey } from './key-registry.js';
import { recordRevokedKeyUse, type RevokedKeyUse } from './misuse.js';
import { hashServiceKey, type ServiceCallerIdentity, type ServiceKeyCheck } from './service-key-auth.js';

export interface VerifierOptions {
  target: string;
  pool: pg.Pool;
  /** Periodic reload (ms); NOTIFY makes changes visible sooner. */
  refreshMs?: number;
  /** How often usage is written (ms). */
  usageFlushMs?: number;
  /** A revoked key's use is recorded at most once per key id per this interval (ms). */
  misuseIntervalMs?: number;
  log?: Pick<Logger, 'warn' | 'info'>;
}

/** An in-memory table of accepted keys: the pure part of the check (also what the benchmark times). */
export class AcceptedKeyTable implements ServiceKeyCheck {
  private byHash = new Map<string, AcceptedKey & { who: ServiceCallerIdentity }>();
  private revokedByHash = new Map<string, { keyId: string; caller: string }>();
  /** Called when a revoked key is presented (the check still refuses it). */
  onRevokedKey: ((key: { keyId: string; caller: string }) => void) | undefined;
  /** Per key id: last use (epoch ms) and uses since the last flush. */
  usage = new Map<string, { at: number; count: number }>();

  replace(keys: readonly AcceptedKey[], revoked: readonly { keyId: string; caller: string; hash: Buffer }[] = []) {
    this.byHash = new Map(
      keys.map((k) => [k.hash.toString('hex'), { ...k, who: { caller: k.caller, keyId: k.keyId } }]),
    );
    this.revokedByHash = new Map(revoked.map((k) => [k.hash.toString('hex'), { keyId: k.keyId, caller: k.caller }]));
  }

  get size() {
    return this.byHash.size;
  }

  identify(given: string): ServiceCallerIdentity | undefined {
    const h = hashServiceKey(given);
    const hex = h.toString('hex');
    const entry = this.byHash.get(hex);
    if (!entry || !timingSafeEqual(entry.hash, h)) {
      const revoked = this.revokedByHash.get(hex);
      if (revoked) this.onRevokedKey?.(revoked);
      return undefined;
    }
    const now = Date.now();
    const u = this.usage.get(entry.keyId);
    if (u) {
      u.at = now;
      u.count++;
    } else this.usage.set(entry.keyId, { at: now, count: 1 });
    return entry.who;
  }

  /** Takes the usage gathered so far (and starts a new batch). */
  drainUsage(): Map<string, { lastUsedAt: Date; count: number }> {
    const taken = this.usage;
    this.usage = new Map();
    return new Map([...taken].map(([id, u]) => [id, { lastUsedAt: new Date(u.at), count: u.count }]));
  }
}

export const SERVICE_KEYS_CHANNEL = 'service_keys';

export class ServiceKeyVerifier extends AcceptedKeyTable {
  /** LISTEN on a connection of its own (not one of the pool's: a small pool must not lose a connection to it). */
  private channel: ChannelListener | undefined;
  private timers: NodeJS.Timeout[] = [];
  private closed = false;
  private loading: Promise<void> | undefined;
  private reloadAgain = false;
  /** The PostgreSQL backend of the listening connection (diagnostics, tests). */
  get listenerPid(): number | undefined {
    return this.channel?.pid;
  }
  /** When the accepted keys were last loaded (epoch ms). */
  loadedAt = 0;

  /** When each revoked key id's use was last recorded by this process (epoch ms). */
  private misuseReported = new Map<string, number>();

  private constructor(readonly opts: VerifierOptions) {
    super();
    this.onRevokedKey = (k) => this.revokedKeyUsed(k);
  }

  private revokedKeyUsed(k: { keyId: string; caller: string }) {
    const now = Date.now();
    const last = this.misuseReported.get(k.keyId);
    if (last !== undefined && now - last < (this.opts.misuseIntervalMs ?? 3600_000)) return;
    this.misuseReported.set(k.keyId, now);
    const use: RevokedKeyUse = { ...k, target: this.opts.target };
    this.opts.log?.warn(
      { ...use, alert: 'service-key.revoked-key-used' },
      'a revoked service key was presented (refused)',
    );
    recordRevokedKeyUse(this.opts.pool, use).catch((err: Error) => {
      this.misuseReported.delete(k.keyId);
      this.opts.log?.warn({ err: err.message, ...use }, 'revoked-key use not recorded');
    });
  }

  /** Loads the target's keys (a failure stops the start), listens for changes, starts the timers. */
  /** The verifier of a platform service, with the refresh and flush intervals of its configuration. */
  static forService(
    target: string,
    pool: pg.Pool,
    cfg: Pick<Config, 'SERVICE_KEY_REFRESH_MS' | 'SERVICE_KEY_USAGE_FLUSH_MS' | 'SERVICE_KEY_MISUSE_ALERT_INTERVAL_MS'>,
    log: Pick<Logger, 'warn' | 'info'>,
  ): Promise<ServiceKeyVerifier> {
    return ServiceKeyVerifier.start({
      target,
      pool,
      refreshMs: cfg.SERVICE_KEY_REFRESH_MS,
      usageFlushMs: cfg.SERVICE_KEY_USAGE_FLUSH_MS,
      misuseIntervalMs: cfg.SERVICE_KEY_MISUSE_ALERT_INTERVAL_MS,
      log,
    });
  }

  static async start(opts: VerifierOptions): Promise<ServiceKeyVerifier> {
    const v = new ServiceKeyVerifier(opts);
    await v.listen();
    await v.reload();
    v.timers.push(
      setInterval(() => void v.periodic(), opts.refreshMs ?? 30_000).unref(),
      setInterval(() => void v.flush(), opts.usageFlushMs ?? 5_000).unref(),
    );
    return v;
  }

  get target() {
    return this.opts.target;
  }

  /** Reloads now (coalesces concurrent calls: one more load after the one in flight). */
  reload(): Promise<void> {
    if (this.loading) {
      this.reloadAgain = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        do {
          this.reloadAgain = false;
          const [accepted, revoked] = await Promise.all([
            acceptedKeys(this.opts.pool, this.opts.target),
            revokedKeys(this.opts.pool, this.opts.target),
          ]);
          this.replace(accepted, revoked);
          this.loadedAt = Date.now();
        } while (this.reloadAgain && !this.closed);
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  /** Writes the usage gathered since the last flush (put back on failure, tried again next time). */
  async flush(): Promise<void> {
    const batch = this.drainUsage();
    if (batch.size === 0) return;
    try {
      await recordKeyUsage(this.opts.pool, batch);
    } catch (err) {
      for (const [id, u] of batch) {
        const now = this.usage.get(id);
        this.usage.set(id, { at: Math.max(now?.at ?? 0, u.lastUsedAt.getTime()), count: (now?.count ?? 0) + u.count });
      }
      this.opts.log?.warn(
        { err: (err as Error).message, target: this.opts.target },
        'service-key usage not recorded yet',
      );
    }
  }

  private async periodic() {
    if (this.closed) return;
    try {
      await this.reload();
    } catch (err) {
      this.opts.log?.warn(
        { err: (err as Error).message, target: this.opts.target },
        'service keys not reloaded; keeping the last ones',
      );
    }
  }

  /** Reloads on each change of this target's keys, and once listening again after a lost connection. */
  private async listen() {
    const reload = () =>
      this.reload().catch((err: Error) =>
        this.opts.log?.warn({ err: err.message, target: this.opts.target }, 'service keys not reloaded'),
      );
    this.channel = await listenToChannel(
      this.opts.pool.options,
      SERVICE_KEYS_CHANNEL,
      {
        onNotice: (target) => target === this.opts.target && void reload(),
        onReconnect: () => void reload(),
        onError: (err) =>
          this.opts.log?.warn({ err: err.message, target: this.opts.target }, 'service keys: listening again'),
      },
      this.opts.refreshMs ?? 30_000,
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.flush();
    await this.channel?.close();
  }
}
