/**
 * A stand-in for the one kubelet behaviour the platform relies on: Secret volumes. Services with
 * SECRET_STORE=kubernetes read their keys from a Secret mounted as a volume
 * (domain/service-keys/kubernetes-secret-volume.ts); in a cluster the kubelet of the pod's node
 * keeps that volume in step with the Secret. Here a watch on the Secrets of one namespace on the
 * real Kubernetes API server (an informer: list, then watch from its resourceVersion, relisting
 * when the watch ends) writes each Secret's volume under `<root>/<name>` as the kubelet's
 * AtomicWriter does: the files in a new `..<timestamp>` directory, a `..data_tmp` symlink to it
 * renamed over `..data`, the visible files symlinks `<key> -> ..data/<key>`, the old directory
 * removed. Log lines name the Secret and its resourceVersion, never its data.
 */
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { CoreV1Api, KubeConfig, makeInformer, type V1Secret } from '@kubernetes/client-node';

export interface SecretVolumesOptions {
  kubeconfigPath: string;
  namespace: string;
  /** Where volumes are written: `<root>/<secret name>`. */
  root: string;
  /** Only Secrets with these labels (`plana.dev/secret=service-keys`), as a pod mounts only its own. */
  labelSelector?: string;
  log?: (line: string) => void;
}

export interface SecretVolumes {
  volumeDir(name: string): string;
  stop(): Promise<void>;
}

const RESTART_AFTER_MS = 1_000;

export async function startSecretVolumes(opts: SecretVolumesOptions): Promise<SecretVolumes> {
  const kc = new KubeConfig();
  kc.loadFromFile(opts.kubeconfigPath);
  const api = kc.makeApiClient(CoreV1Api);
  const { namespace, labelSelector } = opts;
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const volumeDir = (name: string) => path.join(opts.root, name);
  const informer = makeInformer(
    kc,
    `/api/v1/namespaces/${namespace}/secrets`,
    () => api.listNamespacedSecret({ namespace, labelSelector }),
    labelSelector,
  );
  const project = (secret: V1Secret) => {
    const name = secret.metadata?.name ?? '';
    writeVolume(volumeDir(name), secret.data ?? {});
    log(`kubelet-stand-in volume ${namespace}/${name} at resourceVersion ${secret.metadata?.resourceVersion}`);
  };
  let stopped = false;
  informer.on('add', project);
  informer.on('update', project);
  informer.on('error', (err: unknown) => {
    log(
      `kubelet-stand-in watch of ${namespace}/secrets ended (${(err as { code?: string })?.code ?? 'error'}); again in 1 s`,
    );
    if (!stopped) setTimeout(() => void informer.start().catch(() => {}), RESTART_AFTER_MS).unref();
  });
  await informer.start();
  return {
    volumeDir,
    stop: async () => {
      stopped = true;
      await informer.stop();
    },
  };
}

/** The kubelet's AtomicWriter: new timestamped directory, `..data` swapped by rename, visible files as symlinks. */
export function writeVolume(dir: string, data: Record<string, string>) {
  mkdirSync(dir, { recursive: true });
  const stamp = `..${new Date().toISOString().slice(0, 19).replace(/[-T:]/g, '_')}.${randomBytes(4).readUInt32BE(0)}`;
  mkdirSync(path.join(dir, stamp), { mode: 0o755 });
  for (const [k, v] of Object.entries(data))
    writeFileSync(path.join(dir, stamp, k), Buffer.from(v, 'base64'), { mode: 0o644 });

  const dataLink = path.join(dir, '..data');
  const old = existsSync(dataLink) ? readlinkSync(dataLink) : undefined;
  const tmp = path.join(dir, '..data_tmp');
  rmSync(tmp, { force: true });
  symlinkSync(stamp, tmp);
  renameSync(tmp, dataLink); // the atomic swap readers see

  for (const k of Object.keys(data)) {
    const visible = path.join(dir, k);
    if (!existsSync(visible)) symlinkSync(path.join('..data', k), visible);
  }
  for (const entry of readdirSync(dir)) {
    if (!entry.startsWith('..') && !(entry in data)) rmSync(path.join(dir, entry), { force: true });
  }
  if (old && old !== stamp) rmSync(path.join(dir, old), { recursive: true, force: true });
}

/**
 * Run directly: `npm run start:kubelet` projects the service-key Secrets of KUBERNETES_NAMESPACE
 * (default plana) on the API server of KUBECONFIG into DATA_DIR/kubelet/volumes/<name> (DATA_DIR
 * as `npm run dev` has it; point SECRETS_MOUNT_DIR there).
 */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { KUBECONFIG, KUBERNETES_NAMESPACE = 'plana' } = process.env;
  if (!KUBECONFIG) throw new Error('Set KUBECONFIG (npm run dev prints it).');
  const root = path.join(
    process.env.DATA_DIR ?? (process.env.ERP_BACKEND === 'odoo' ? '.data/odoo' : '.data'),
    'kubelet',
    'volumes',
  );
  const volumes = await startSecretVolumes({
    kubeconfigPath: KUBECONFIG,
    namespace: KUBERNETES_NAMESPACE,
    root,
    labelSelector: 'plana.dev/secret=service-keys',
  });
  console.log(`kubelet stand-in: Secret volumes of ${KUBERNETES_NAMESPACE} under ${root}`);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void volumes.stop());
}
