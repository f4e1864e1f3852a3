/**
 * Which secret store a process uses (SECRET_STORE): `postgres` (PgSecretStore, the local default)
 * or `kubernetes` (Secrets: kubernetes-secret-layout.ts, read from the mounted volume by
 * kubernetes-secret-volume.ts, written through the API by kubernetes-secret-writer.ts). Consumers call createSecretStore; the rotation and
 * the bootstrap call createSecretStoreWriter.
 *
 * The seam with Kubernetes. The rotation stores a new key in the same PostgreSQL transaction that
 * registers it `pending` at the target (generateRotationKey), so a retried step never makes a second
 * key; a Kubernetes API call cannot join that transaction. So in Kubernetes mode PostgreSQL stays the
 * rotation's record (versions sealed with SECRETS_KEY, as locally) and KubernetesPublishingStore
 * publishes a version to the Secret when it becomes current (step 3 and the roll-back:
 * `makeCurrent`), idempotently (a version already in the Secret is not written again), before it
 * marks it current in PostgreSQL; the bootstrap publishes each pair's current version after its
 * transaction commits (publishCurrentKeys). Consumers only ever read the mounted Secret.
 */
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import type { Queryable } from '../../lib/db.js';
import { kubeCredentials } from '../../lib/kube-config.js';
import { SERVICE_KEY_INVENTORY } from './inventory.js';
import { KubernetesSecretVolume } from './kubernetes-secret-volume.js';
import { KubernetesSecretWriter } from './kubernetes-secret-writer.js';
import { holderOptions, reportingStore, type ReportingStore } from './holders.js';
import { PgSecretStore, type SecretStore, type TransactionalSecretStoreWriter } from './secret-store.js';
import type { Logger } from '../../lib/logger.js';

/** The Secrets writer: KUBECONFIG's credentials, else the pod's service account (lib/kube-config.ts). */
export function kubernetesWriter(cfg: Config): KubernetesSecretWriter {
  return new KubernetesSecretWriter({
    credentials: kubeCredentials(cfg.KUBECONFIG),
    namespace: cfg.KUBERNETES_NAMESPACE,
    secretName: cfg.KUBERNETES_SECRET_NAME,
  });
}

/**
 * The consumers' store: where a caller reads the key it sends. It reports what it holds to each
 * pair's target (holders.ts: the `holders` switch proof of a rotation); `close()` stops that.
 */
export function createSecretStore(
  cfg: Config,
  pool: pg.Pool,
  ttlMs = cfg.SERVICE_KEY_SECRET_TTL_MS,
  log?: Pick<Logger, 'warn' | 'info'>,
): ReportingStore {
  const store: SecretStore & { close?(): void } =
    cfg.SECRET_STORE === 'kubernetes'
      ? new KubernetesSecretVolume({ dir: cfg.SECRETS_MOUNT_DIR, ttlMs, pollMs: cfg.SECRETS_MOUNT_POLL_MS })
      : new PgSecretStore(pool, cfg.SECRETS_KEY, ttlMs);
  // a store whose pool has ended belongs to a process (or a test's service) that has stopped
  return reportingStore(
    store,
    holderOptions({ ...cfg, SERVICE_KEY_SECRET_TTL_MS: ttlMs }, { stopped: () => pool.ended, log }),
  );
}

/** The rotation's and the bootstrap's store. */
export function createSecretStoreWriter(cfg: Config, pool: pg.Pool): TransactionalSecretStoreWriter {
  const record = new PgSecretStore(pool, cfg.SECRETS_KEY, 0);
  return cfg.SECRET_STORE === 'kubernetes' ? new KubernetesPublishingStore(record, kubernetesWriter(cfg)) : record;
}

/** After the bootstrap (npm run db:migrate): in Kubernetes mode, every live pair's current key is published to its Secret. */
export async function publishCurrentKeys(
  cfg: Config,
  pool: pg.Pool,
  pairs: readonly { caller: string; target: string }[] = SERVICE_KEY_INVENTORY.filter((p) => p.live),
): Promise<number> {
  if (cfg.SECRET_STORE !== 'kubernetes') return 0;
  const store = new KubernetesPublishingStore(new PgSecretStore(pool, cfg.SECRETS_KEY, 0), kubernetesWriter(cfg));
  for (const pair of pairs) await store.publishCurrent(pair.caller, pair.target);
  return pairs.length;
}

/** PostgreSQL records the versions (transactionally); the Kubernetes Secret gets each one that becomes current. */
export class KubernetesPublishingStore implements TransactionalSecretStoreWriter {
  constructor(
    private readonly record: PgSecretStore,
    private readonly k8s: KubernetesSecretWriter,
  ) {}

  /** Recorded in PostgreSQL (in `db`'s transaction when given); published now only when current and outside a transaction. */
  async put(
    caller: string,
    target: string,
    secret: { key: string; keyId: string },
    makeCurrent: boolean,
    db?: Queryable,
  ): Promise<number> {
    const version = await this.record.put(caller, target, secret, makeCurrent, db);
    if (makeCurrent && !db) await this.k8s.publish(caller, target, { ...secret, version }, true);
    return version;
  }

  /** Published to the Secret (idempotent), then marked current in PostgreSQL; the roll-back is the same call with the old version. */
  async makeCurrent(caller: string, target: string, version: number): Promise<void> {
    const secret = await this.record.version(caller, target, version);
    await this.k8s.publish(caller, target, secret, true);
    await this.record.makeCurrent(caller, target, version);
  }

  versions(caller: string, target: string) {
    return this.record.versions(caller, target);
  }

  /** The pair's current version as PostgreSQL records it, made current in the Secret (idempotent). */
  async publishCurrent(caller: string, target: string): Promise<void> {
    const current = (await this.record.versions(caller, target)).find((v) => v.isCurrent);
    if (!current) return;
    await this.k8s.publish(caller, target, await this.record.version(caller, target, current.version), true);
  }
}
