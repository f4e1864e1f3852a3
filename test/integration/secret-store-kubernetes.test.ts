/**
 * The Kubernetes secret store (SECRET_STORE=kubernetes) on the run's real Kubernetes API server and
 * its real PostgreSQL: versions written through the API as a ServiceAccount with only the Role the
 * manifests give the writers (put, switch, roll back, 409 Conflict retries), consumers reading the
 * mounted volume (written by the kubelet stand-in, sandbox/kubelet, from a watch on the real API)
 * pick up a new current key after the `..data` swap without a restart (cache TTL set to a minute,
 * so only the swap can make them re-read), the rotation's seam (recorded in PostgreSQL in the
 * caller's transaction, published when current), in-cluster credentials, TLS, refused credentials
 * and RBAC as clear errors, no key in any log or error, and a whole rotation (the real workflow on
 * the run's Temporal) whose consumer reads only the mounted Secret.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { lstatSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createRotationActivities } from '../../activities/service-key-rotation.js';
import { startRotation, type Pair } from '../../domain/service-keys/rotation.js';
import type { ServiceKeyPair } from '../../domain/service-keys/inventory.js';
import { listKeys } from '../../domain/service-keys/key-registry.js';
import type { RotationResult, RotationSettings } from '../../domain/service-keys/workflow-contract.js';
import { keyConsumer, startKeyCheckedTarget } from '../support/service-keys.js';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { createPool, withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { kubeCredentials } from '../../lib/kube-config.js';
import { ensureServiceKeys } from '../../domain/service-keys/bootstrap.js';
import { KubernetesSecretVolume } from '../../domain/service-keys/kubernetes-secret-volume.js';
import { KubernetesSecretWriter } from '../../domain/service-keys/kubernetes-secret-writer.js';
import { createKey } from '../../domain/service-keys/key-registry.js';
import {
  createSecretStore,
  createSecretStoreWriter,
  KubernetesPublishingStore,
  publishCurrentKeys,
} from '../../domain/service-keys/secret-store-factory.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import { startSecretVolumes, type SecretVolumes } from '../../sandbox/kubelet/secret-volumes.js';
import { tempDir, testConfig, workflowBundle } from '../support/env.js';
import {
  adminKubeconfig,
  applySecretWriterRole,
  clusterOf,
  kube,
  serviceAccountKubeconfig,
  serviceAccountToken,
  testNamespace,
  writeKubeconfig,
} from '../support/service-accounts.js';
import { workflowSpanSinks } from '../../worker/tracing.js';

const MINUTE = 60_000;

let NS: string;
let kubelet: SecretVolumes;
let dir: string;
/** Acts as the ServiceAccount the manifests give the Secrets writers (worker, migrate). */
let writerKubeconfig: string;
let cfg: Config;
let pool: pg.Pool;
const logLines: string[] = [];
/** Every key this file wrote, to search logs and errors for. */
const keys: string[] = [];
const readers: { close(): void }[] = [];

const newKey = () => {
  const key = randomBytes(32).toString('hex');
  keys.push(key);
  return key;
};
const caller = () => `t${randomBytes(3).toString('hex')}`;
const secretName = (c: string) => `plana-service-keys-${c}`;
const writer = (kubeconfig = writerKubeconfig) =>
  new KubernetesSecretWriter({
    credentials: kubeCredentials(kubeconfig),
    namespace: NS,
    secretName: 'plana-service-keys-{caller}',
  });
const volume = (c: string, opts: { pollMs?: number } = {}) => {
  const r = new KubernetesSecretVolume({
    dir: kubelet.volumeDir(secretName(c)),
    ttlMs: MINUTE,
    pollMs: opts.pollMs ?? MINUTE,
  });
  readers.push(r);
  return r;
};
/** The Secret as any Kubernetes client sees it (kubectl, admin). */
const secretData = (c: string) => {
  const secret = JSON.parse(kube(['get', 'secret', secretName(c), '-n', NS, '-o', 'json'])) as {
    data: Record<string, string>;
    metadata: { resourceVersion: string; labels: Record<string, string> };
  };
  return secret;
};
/** Waits until the consumer's answer changes (the volume swap is asynchronous, as the kubelet's). */
const eventually = (fn: () => Promise<void>) => vi.waitFor(fn, { timeout: 10_000, interval: 25 });
const errorOf = async (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err as Error,
  );

beforeAll(async () => {
  dir = tempDir('k8s');
  NS = testNamespace('sk');
  applySecretWriterRole(NS, 'plana-secrets-writer');
  writerKubeconfig = serviceAccountKubeconfig(dir, NS, 'plana-secrets-writer');
  kubelet = await startSecretVolumes({
    kubeconfigPath: adminKubeconfig(),
    namespace: NS,
    root: path.join(dir, 'volumes'),
    labelSelector: 'plana.dev/secret=service-keys',
    log: (l) => logLines.push(l),
  });
  cfg = await testConfig({
    SECRET_STORE: 'kubernetes',
    KUBECONFIG: writerKubeconfig,
    KUBERNETES_NAMESPACE: NS,
    SECRETS_MOUNT_POLL_MS: '100',
  });
  pool = createPool(cfg.DATABASE_URL, 3);
});

afterAll(async () => {
  for (const r of readers) r.close();
  await pool?.end();
  await kubelet?.stop();
});

describe('versions written through the Kubernetes API', () => {
  it('puts, switches and rolls back; the Secret holds the current and the other version', async () => {
    const c = caller();
    const w = writer();
    const k1 = newKey();
    const k2 = newKey();
    expect(await w.put(c, 'events', { key: k1, keyId: 'sk_one' }, true)).toBe(1);
    expect(await w.put(c, 'events', { key: k2, keyId: 'sk_two' }, false)).toBe(2);
    expect(await w.versions(c, 'events')).toMatchObject([
      { version: 2, keyId: 'sk_two', isCurrent: false },
      { version: 1, keyId: 'sk_one', isCurrent: true },
    ]);

    // the Secret as any Kubernetes client sees it
    const secret = secretData(c);
    expect(secret.metadata.labels).toMatchObject({ 'plana.dev/secret': 'service-keys' });
    expect(Object.keys(secret.data).sort()).toEqual([`${c}.events`, `${c}.events.next`]);
    expect(JSON.parse(Buffer.from(secret.data[`${c}.events`]!, 'base64').toString())).toMatchObject({
      keyId: 'sk_one',
      key: k1,
      version: 1,
    });

    await w.makeCurrent(c, 'events', 2);
    expect((await w.versions(c, 'events')).find((v) => v.isCurrent)?.keyId).toBe('sk_two');
    await w.makeCurrent(c, 'events', 2); // idempotent: a retried step changes nothing
    expect((await w.versions(c, 'events')).find((v) => v.isCurrent)?.keyId).toBe('sk_two');
    await w.makeCurrent(c, 'events', 1); // the roll-back
    expect(await w.versions(c, 'events')).toMatchObject([
      { version: 2, keyId: 'sk_two', isCurrent: false },
      { version: 1, keyId: 'sk_one', isCurrent: true },
    ]);

    const missing = await errorOf(w.makeCurrent(c, 'events', 7));
    expect(missing).toBeInstanceOf(AppError);
    expect((missing as AppError).code).toBe('NOT_FOUND');
    expect(missing!.message).toContain(`No version 7 of the ${c} → events key`);
  });

  it('two writers at once both land: a stale write gets 409 Conflict and the writer re-reads', async () => {
    const c = caller();
    const [a, b] = [writer(), writer()];
    await a.put(c, 'events', { key: newKey(), keyId: 'sk_base' }, true);
    const results = await Promise.all([
      a.put(c, 'events', { key: newKey(), keyId: 'sk_a' }, false),
      b.put(c, 'events', { key: newKey(), keyId: 'sk_b' }, false),
    ]);
    expect(results.sort()).toEqual([2, 3]);
    const after = await a.versions(c, 'events');
    expect(after.map((v) => v.version)).toEqual([3, 1]);
    const third = after[0]!.keyId;
    expect(['sk_a', 'sk_b']).toContain(third);

    // what the writer relies on: a merge patch carrying an old resourceVersion is refused
    const stale = secretData(c).metadata.resourceVersion;
    await a.makeCurrent(c, 'events', 3);
    const patch = JSON.stringify({ metadata: { resourceVersion: stale }, data: { [`${c}.events`]: null } });
    const refused = await errorOf(
      Promise.resolve().then(() => kube(['patch', 'secret', secretName(c), '-n', NS, '--type=merge', '-p', patch])),
    );
    expect(String((refused as { stderr?: string }).stderr)).toContain('the object has been modified');
    expect((await a.versions(c, 'events')).find((v) => v.isCurrent)?.keyId).toBe(third);
  });
});

describe('a consumer reading the mounted Secret', () => {
  it('sees the new current key after the kubelet-style swap, without a restart (cache TTL a minute)', async () => {
    const c = caller();
    const w = writer();
    const k1 = newKey();
    const k2 = newKey();
    await w.put(c, 'notifications', { key: k1, keyId: 'sk_old' }, true);
    // the volume as the kubelet lays it out, once the watch has brought the Secret
    const mount = kubelet.volumeDir(secretName(c));
    await eventually(async () => expect(readFileSync(path.join(mount, `${c}.notifications`), 'utf8')).toContain(k1));
    const reader = volume(c); // fs.watch only: its fallback check is a minute away
    const first = readlinkSync(path.join(mount, '..data'));
    expect(first).toMatch(/^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+$/);
    expect(lstatSync(path.join(mount, `${c}.notifications`)).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(mount, `${c}.notifications`))).toBe(`..data/${c}.notifications`);

    expect(await reader.current(c, 'notifications')).toEqual({ key: k1, keyId: 'sk_old', version: 1 });
    await w.put(c, 'notifications', { key: k2, keyId: 'sk_new' }, false);
    await w.makeCurrent(c, 'notifications', 2);
    await eventually(async () =>
      expect(await reader.current(c, 'notifications')).toEqual({ key: k2, keyId: 'sk_new', version: 2 }),
    );

    await w.makeCurrent(c, 'notifications', 1); // roll-back reaches it the same way
    await eventually(async () => expect((await reader.current(c, 'notifications')).keyId).toBe('sk_old'));
  });

  it('started before the Secret is mounted: a clear error, then the key once the volume appears', async () => {
    const c = caller();
    const reader = volume(c, { pollMs: 100 }); // the directory does not exist: no watch possible
    const before = await errorOf(reader.current(c, 'events'));
    expect(before).toBeInstanceOf(AppError);
    expect(before!.message).toContain(`No service key for ${c} → events in the mounted Secret`);
    const k = newKey();
    await writer().put(c, 'events', { key: k, keyId: 'sk_late' }, true);
    await eventually(async () => expect((await reader.current(c, 'events')).key).toBe(k));
  });
});

describe('the rotation seam: PostgreSQL records, Kubernetes gets what becomes current', () => {
  it('bootstrap publishes; a version put in a transaction is published only when made current; the roll-back too', async () => {
    const c = caller();
    const pair = { caller: c, target: 'events' as const };
    const store = createSecretStoreWriter(cfg, pool);
    expect(store).toBeInstanceOf(KubernetesPublishingStore);
    const record = new PgSecretStore(pool, cfg.SECRETS_KEY, 0);

    const [created] = await ensureServiceKeys(pool, store, [pair]);
    expect(await publishCurrentKeys(cfg, pool, [pair])).toBe(1);
    expect(await publishCurrentKeys(cfg, pool, [pair])).toBe(1); // idempotent
    const consumer = createSecretStore(
      { ...cfg, SECRETS_MOUNT_DIR: kubelet.volumeDir(secretName(c)), SERVICE_KEY_SECRET_TTL_MS: MINUTE },
      pool,
    );
    readers.push(consumer);
    await eventually(async () => expect((await consumer.current(c, 'events')).keyId).toBe(created!.keyId));
    const v1 = await consumer.current(c, 'events');
    keys.push(v1.key);
    expect(v1).toMatchObject({ keyId: created!.keyId, version: 1 });
    expect(v1.key).toBe((await record.current(c, 'events')).key);

    // steps 1 + 2 as generateRotationKey does them: registry + store in one transaction
    const { version, keyId } = await withTransaction(pool, async (db) => {
      const { key, record: r } = await createKey(db, pair, 'pending');
      keys.push(key);
      return { version: await store.put(c, 'events', { key, keyId: r.keyId }, false, db), keyId: r.keyId };
    });
    expect(version).toBe(2);
    const k8sView = writer();
    expect((await k8sView.versions(c, 'events')).map((v) => v.version)).toEqual([1]); // nothing published before it is current

    await store.makeCurrent(c, 'events', 2); // step 3
    await store.makeCurrent(c, 'events', 2); // a retried activity
    expect(await k8sView.versions(c, 'events')).toMatchObject([
      { version: 2, keyId, isCurrent: true },
      { version: 1, isCurrent: false },
    ]);
    expect((await record.versions(c, 'events')).find((v) => v.isCurrent)?.version).toBe(2);
    await eventually(async () => expect((await consumer.current(c, 'events')).keyId).toBe(keyId));

    await store.makeCurrent(c, 'events', 1); // the roll-back
    expect((await record.versions(c, 'events')).find((v) => v.isCurrent)?.version).toBe(1);
    expect((await k8sView.versions(c, 'events')).find((v) => v.isCurrent)?.version).toBe(1);
    await eventually(async () => expect((await consumer.current(c, 'events')).keyId).toBe(created!.keyId));
  });
});

describe('a rotation (the real workflow on Temporal) with SECRET_STORE=kubernetes', () => {
  it('a consumer reading the mounted Secret calls its target throughout: no failed call; then the old key gets 401', async () => {
    const targetName = `kt-${randomBytes(3).toString('hex')}`;
    const pair: Pair = { caller: caller(), target: targetName };
    const settings: RotationSettings = {
      acceptWaitMs: 300,
      quietPeriodMs: 1_500,
      pollIntervalMs: 250,
      deadlineMs: 10_000,
      rollbackWaitMs: 300,
    };
    const store = createSecretStoreWriter(cfg, pool);
    // a target of this test's own (not in the inventory), bootstrapped and published as `npm run db:migrate` does
    await ensureServiceKeys(pool, store, [pair as unknown as Pick<ServiceKeyPair, 'caller' | 'target'>]);
    await publishCurrentKeys(cfg, pool, [pair]);
    const target = await startKeyCheckedTarget(pool, targetName);
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const temporal = new Client({ connection });
    const workerConnection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const worker = await Worker.create({
      connection: workerConnection,
      taskQueue: cfg.TEMPORAL_TASK_QUEUE,
      workflowBundle: workflowBundle(),
      sinks: workflowSpanSinks(),
      activities: createRotationActivities({
        pool,
        store,
        secrets: new PgSecretStore(pool, cfg.SECRETS_KEY),
        eventsUrl: cfg.EVENTS_URL,
      }),
    });
    const workerRun = worker.run();
    try {
      // the consumer: the Secret mounted as its volume, a cache of a minute (only the `..data` swap makes it re-read)
      const consumerStore = volume(pair.caller, { pollMs: 100 });
      await eventually(async () => void (await consumerStore.current(pair.caller, pair.target)));
      const old = await consumerStore.current(pair.caller, pair.target);
      const seen = new Set<string>();
      const traffic = keyConsumer(
        target.ping,
        async () => (await consumerStore.current(pair.caller, pair.target)).key,
        seen,
      );

      const started = await startRotation(
        { pool, temporal, taskQueue: cfg.TEMPORAL_TASK_QUEUE, settings },
        pair,
        'manual',
      );
      const result = (await temporal.workflow.getHandle(started.workflowId).result()) as RotationResult;
      const counts = await traffic.stop();
      for (const k of seen) keys.push(k);
      expect(result).toMatchObject({ outcome: 'completed', oldKeyId: old.keyId });
      expect(counts.failed).toBe(0);
      expect(counts.calls).toBeGreaterThan(20);

      const now = await consumerStore.current(pair.caller, pair.target);
      expect(now.keyId).toBe(result.newKeyId);
      expect(await writer().versions(pair.caller, pair.target)).toMatchObject([
        { keyId: result.newKeyId, isCurrent: true },
        { keyId: old.keyId, isCurrent: false },
      ]);
      await target.verifier.reload();
      expect((await target.ping(old.key)).status).toBe(401);
      expect((await target.ping(now.key)).status).toBe(200);
      const states = Object.fromEntries((await listKeys(pool, pair)).map((k) => [k.keyId, k.state]));
      expect(states).toEqual({ [old.keyId]: 'revoked', [now.keyId]: 'current' });
    } finally {
      worker.shutdown();
      await workerRun;
      await workerConnection.close();
      await connection.close();
      await target.close();
    }
  }, 60_000);
});

describe('credentials: in-cluster, TLS', () => {
  it("in a pod: the service account's token and CA from the mounted folder, at KUBERNETES_SERVICE_HOST", async () => {
    // the pod's folder as Kubernetes mounts it, under a prefix of this test's own
    const root = path.join(dir, 'pod');
    const saDir = path.join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(saDir, { recursive: true });
    writeFileSync(path.join(saDir, 'token'), serviceAccountToken(NS, 'plana-secrets-writer'));
    writeFileSync(path.join(saDir, 'ca.crt'), Buffer.from(clusterOf().caData, 'base64'));
    writeFileSync(path.join(saDir, 'namespace'), NS);
    const server = new URL(clusterOf().server);
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = server.hostname;
    process.env.KUBERNETES_SERVICE_PORT = server.port;
    try {
      const credentials = kubeCredentials(undefined, root);
      expect(credentials.source).toContain("the pod's service account");
      const w = new KubernetesSecretWriter({ credentials, namespace: NS, secretName: 'plana-service-keys-{caller}' });
      const c = caller();
      expect(await w.put(c, 'events', { key: newKey(), keyId: 'sk_pod' }, true)).toBe(1);
      expect(await writer().versions(c, 'events')).toMatchObject([{ keyId: 'sk_pod', isCurrent: true }]);
    } finally {
      process.env.KUBERNETES_SERVICE_HOST = saved.host;
      process.env.KUBERNETES_SERVICE_PORT = saved.port;
      if (saved.host === undefined) delete process.env.KUBERNETES_SERVICE_HOST;
      if (saved.port === undefined) delete process.env.KUBERNETES_SERVICE_PORT;
    }
  });

  it('neither KUBECONFIG nor a pod: a clear error when the store is made', () => {
    expect(process.env.KUBERNETES_SERVICE_HOST).toBeUndefined();
    expect(() => createSecretStoreWriter({ ...cfg, KUBECONFIG: undefined }, pool)).toThrow(
      'No Kubernetes credentials: set KUBECONFIG, or run in a pod',
    );
  });

  it("trusts the API server only through the cluster's CA: without it, a clear TLS error and nothing written", async () => {
    const noCa = writeKubeconfig(path.join(dir, 'no-ca.kubeconfig'), serviceAccountToken(NS, 'plana-secrets-writer'), {
      withCa: false,
    });
    const c = caller();
    const err = await errorOf(writer(noCa).put(c, 'events', { key: newKey(), keyId: 'sk_x' }, true));
    expect(err).toBeInstanceOf(AppError);
    expect(err!.message).toMatch(
      new RegExp(
        `Kubernetes API get Secret ${NS}/plana-service-keys-${c} failed: (SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE)`,
      ),
    );
    expect(await writer().versions(c, 'events')).toEqual([]);
  });
});

describe('errors and logs', () => {
  it('an API server that never answers: each call gives up after its timeout with a clear error', async () => {
    const silent = createServer(() => {}); // accepts connections, never answers (not even TLS)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const file = writeKubeconfig(path.join(dir, 'silent.kubeconfig'), 'a-token');
      writeFileSync(file, readFileSync(file, 'utf8').replace(/server: .*/, `server: https://127.0.0.1:${port}`));
      const w = new KubernetesSecretWriter({
        credentials: kubeCredentials(file),
        namespace: NS,
        secretName: 'plana-service-keys-{caller}',
        timeoutMs: 500,
      });
      const started = Date.now();
      const err = await errorOf(w.versions(caller(), 'events'));
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(err!.message).toMatch(/^Kubernetes API get Secret .* timed out after 500 ms\.$/);
    } finally {
      silent.close();
    }
  });

  it('refused credentials (401) give a clear error that names the kubeconfig and holds no key', async () => {
    const wrong = writeKubeconfig(path.join(dir, 'wrong.kubeconfig'), 'not-a-token', { user: 'someone' });
    const k = newKey();
    const err = await errorOf(writer(wrong).put(caller(), 'events', { key: k, keyId: 'sk_x' }, true));
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).extra).toMatchObject({ kubernetesStatus: 401, reason: 'Unauthorized' });
    expect(err!.message).toContain('answered 401 Unauthorized: the credentials of the kubeconfig');
    expect(err!.message).toContain(wrong);
    expect(err!.message).not.toContain(k);

    const noFile = await errorOf(Promise.resolve().then(() => writer(path.join(dir, 'absent'))));
    expect(noFile!.message).toContain(`Cannot read the kubeconfig at ${path.join(dir, 'absent')}`);
  });

  it('RBAC: a service account without the Role may not write, and the error says what it needs', async () => {
    const outsider = serviceAccountKubeconfig(dir, NS, 'no-secrets');
    const c = caller();
    const err = await errorOf(writer(outsider).put(c, 'events', { key: newKey(), keyId: 'sk_x' }, true));
    expect((err as AppError).extra).toMatchObject({ kubernetesStatus: 403, reason: 'Forbidden' });
    expect(err!.message).toContain(`may not get Secret ${NS}/plana-service-keys-${c} (RBAC: get, create, patch`);
    expect(await writer().versions(c, 'events')).toEqual([]);
  });

  it('never shows a key in the kubelet stand-in log, the API server log or an error', async () => {
    const c = caller();
    const w = writer();
    const k = newKey();
    await w.put(c, 'events', { key: k, keyId: 'sk_logged' }, true);
    const errors = [
      await errorOf(w.makeCurrent(c, 'events', 9)),
      await errorOf(
        writer(writeKubeconfig(path.join(dir, 'wrong.kubeconfig'), 'not-a-token')).makeCurrent(c, 'events', 1),
      ),
    ];
    await eventually(async () => expect(logLines.some((l) => l.includes(secretName(c)))).toBe(true));
    const apiServerLog = readFileSync(path.join(path.dirname(adminKubeconfig()), 'kube-apiserver.log'), 'utf8');
    const haystack = [...logLines, apiServerLog, ...errors.map((e) => `${e?.message} ${JSON.stringify(e)}`)].join('\n');
    for (const key of keys) {
      expect(haystack).not.toContain(key);
      expect(haystack).not.toContain(Buffer.from(key).toString('base64').slice(0, 40));
    }
  });
});
