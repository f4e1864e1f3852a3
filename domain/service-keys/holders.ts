/**
 * The consumer side of the `holders` switch proof (inventory.ts, docs/operators.md "Service keys"): a
 * long-lived process reports the key it holds for a pair to the pair's target, so that an idle
 * consumer can prove a rotation's switch from the target's own usage records.
 *
 * Every pair a process has read through a reporting store (reportingStore below; what
 * createSecretStore returns) is *held*. Every `tickMs` the holder reads each held pair through the
 * same store (and so the same cache) the process's calls use, and sends one
 * `GET <target>/.well-known/service-key` with that key when
 *   - its key id is not the one last reported or sent (a new version: the announcement), or
 *   - nothing has gone to the target with it for `heartbeatMs` (the heartbeat of an idle process).
 * A process's own calls count as reports (a read through the store is followed by a call), so a
 * busy process adds no requests. The target's ServiceKeyVerifier records the check like any call;
 * the answer is thrown away. A process that keeps an old key (a cache that never reloads) reports
 * the old key, so the rotation sees the old key id still in use and rolls back. Reports never log a
 * key: only caller, target, key id and the target's status.
 */
import type { Config } from '../../lib/config.js';
import type { Logger } from '../../lib/logger.js';
import { SERVICE_KEY_CHECK_PATH } from './inventory.js';
import type { SecretStore, ServiceKeySecret } from './secret-store.js';

export interface HolderOptions {
  /** The base URL of a target (undefined: this process cannot reach it, nothing is reported). */
  targetUrl: (target: string) => string | undefined;
  /** At least this often a held key is reported while the process is idle (SERVICE_KEY_HOLDER_HEARTBEAT_MS). */
  heartbeatMs: number;
  /** How often held pairs are read to notice a new version (the store's cache TTL, at most heartbeatMs). */
  tickMs: number;
  /** Stop reporting when this says so (the store's pool has ended). */
  stopped?: () => boolean;
  log?: Pick<Logger, 'warn' | 'info'>;
}

interface Held {
  caller: string;
  target: string;
  /** The key id last sent to the target (by a report or by one of the process's calls). */
  keyId: string | undefined;
  at: number;
  /** The last report's failure, logged once until it changes. */
  failing?: string;
}

export class ServiceKeyHolder {
  private held = new Map<string, Held>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly store: SecretStore,
    private readonly opts: HolderOptions,
  ) {}

  /** The pairs held now, with the key id last sent (tests, diagnostics). */
  get pairs(): { caller: string; target: string; keyId: string | undefined }[] {
    return [...this.held.values()].map(({ caller, target, keyId }) => ({ caller, target, keyId }));
  }

  /** The process read `secret` for a call it is about to make: the pair is held, and that call reports it. */
  used(caller: string, target: string, secret: Pick<ServiceKeySecret, 'keyId'>) {
    if (this.closed || !this.opts.targetUrl(target)) return;
    const slot = `${caller} ${target}`;
    const h = this.held.get(slot);
    if (h) {
      h.keyId = secret.keyId;
      h.at = Date.now();
    } else this.held.set(slot, { caller, target, keyId: secret.keyId, at: Date.now() });
    this.timer ??= setInterval(
      () => void this.tick(),
      Math.max(50, Math.min(this.opts.tickMs, this.opts.heartbeatMs)),
    ).unref();
  }

  /** One round: reports each held pair whose key changed or whose heartbeat is due. */
  tick(): Promise<void> {
    if (this.ticking) return this.ticking;
    this.ticking = (async () => {
      try {
        if (this.opts.stopped?.()) {
          this.stop();
          return;
        }
        await Promise.all([...this.held.values()].map((h) => this.check(h)));
      } finally {
        this.ticking = undefined;
      }
    })();
    return this.ticking;
  }

  private async check(h: Held) {
    let secret: ServiceKeySecret;
    try {
      secret = await this.store.current(h.caller, h.target);
    } catch (err) {
      this.failed(h, `the secret store did not answer (${(err as Error).message})`);
      return;
    }
    const due = secret.keyId !== h.keyId || Date.now() - h.at >= this.opts.heartbeatMs;
    if (due) await this.report(h, secret);
  }

  private async report(h: Held, secret: ServiceKeySecret) {
    const base = this.opts.targetUrl(h.target);
    if (!base || this.closed) return;
    const announce = secret.keyId !== h.keyId;
    try {
      const res = await fetch(new URL(SERVICE_KEY_CHECK_PATH, base), {
        headers: { 'x-api-key': secret.key },
        signal: AbortSignal.timeout(Math.max(1_000, Math.min(10_000, this.opts.heartbeatMs))),
      });
      await res.arrayBuffer().catch(() => undefined);
      // sent either way: a refused key is logged, and reported again only at the next heartbeat
      h.keyId = secret.keyId;
      h.at = Date.now();
      if (res.status !== 200) return this.failed(h, `${h.target} answered ${res.status} to ${secret.keyId}`);
      if (h.failing)
        this.opts.log?.info(
          { caller: h.caller, target: h.target, keyId: secret.keyId },
          'service-key report accepted again',
        );
      h.failing = undefined;
      if (announce)
        this.opts.log?.info(
          { caller: h.caller, target: h.target, keyId: secret.keyId },
          'reported the new service key to its target',
        );
    } catch (err) {
      this.failed(h, `${h.target} not reached (${(err as Error).message})`);
    }
  }

  private failed(h: Held, why: string) {
    if (h.failing === why) return;
    h.failing = why;
    this.opts.log?.warn({ caller: h.caller, target: h.target, keyId: h.keyId, why }, 'service-key report failed');
  }

  /** Stops reporting (the process is shutting down). */
  stop() {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** The base URLs of the platform's services that are service-key targets. */
export function targetUrls(
  cfg: Pick<
    Config,
    'ACCOUNT_API_URL' | 'NOTIFICATIONS_URL' | 'EVENTS_URL' | 'AUTH_URL' | 'BANKING_URL' | 'AGENTS_URL' | 'DATA_URL'
  >,
) {
  const urls: Record<string, string> = {
    'account-api': cfg.ACCOUNT_API_URL,
    notifications: cfg.NOTIFICATIONS_URL,
    events: cfg.EVENTS_URL,
    auth: cfg.AUTH_URL,
    banking: cfg.BANKING_URL,
    agents: cfg.AGENTS_URL,
    data: cfg.DATA_URL,
  };
  return (target: string): string | undefined => urls[target];
}

export type ReportingStore = SecretStore & { readonly holder: ServiceKeyHolder; close(): void };

/**
 * A secret store that holds what it serves: every pair read through it is reported to its target
 * (above). What long-lived consumer processes use; `close()` stops the reports (and closes the
 * wrapped store when it has a close).
 */
export function reportingStore(store: SecretStore & { close?(): void }, opts: HolderOptions): ReportingStore {
  const holder = new ServiceKeyHolder(store, opts);
  return {
    holder,
    async current(caller, target) {
      const secret = await store.current(caller, target);
      holder.used(caller, target, secret);
      return secret;
    },
    invalidate: () => store.invalidate(),
    close() {
      holder.stop();
      store.close?.();
    },
  };
}

/** The holder options of a platform process, from its configuration. */
export function holderOptions(
  cfg: Pick<Config, 'SERVICE_KEY_HOLDER_HEARTBEAT_MS' | 'SERVICE_KEY_SECRET_TTL_MS'> & Parameters<typeof targetUrls>[0],
  extra: Pick<HolderOptions, 'stopped' | 'log'> = {},
): HolderOptions {
  return {
    targetUrl: targetUrls(cfg),
    heartbeatMs: cfg.SERVICE_KEY_HOLDER_HEARTBEAT_MS,
    tickMs: Math.max(cfg.SERVICE_KEY_SECRET_TTL_MS, 1_000),
    ...extra,
  };
}
