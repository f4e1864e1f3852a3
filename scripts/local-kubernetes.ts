/**
 * A private Kubernetes API server on loopback (scripts/local-servers.ts): Debian's etcd on free
 * client and peer ports, and kube-apiserver (built once by scripts/bootstrap.sh into the cache
 * folder) with a self-signed serving certificate (`--cert-dir`), a service-account key pair, RBAC,
 * an admin token in group system:masters, and Secrets encrypted at rest (aescbc). Everything lives
 * under `dir`: keys and tokens are made on the first start and reused on the next (`npm run dev`
 * keeps its data there), and a kubeconfig for kubectl and the platform is written beside them.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { homedir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, ManagedProcess } from './managed-process.js';

export const KUBERNETES_VERSION = '1.34.4';
export const kubernetesCacheDir = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'),
  'plana',
  `kube-${KUBERNETES_VERSION}`,
);

/** kube-apiserver or kubectl: $KUBE_APISERVER / $KUBECTL, or the project's cached build. */
export function findKubeBinary(name: 'kube-apiserver' | 'kubectl'): string {
  const given = name === 'kubectl' ? process.env.KUBECTL : process.env.KUBE_APISERVER;
  const candidates = [given, path.join(kubernetesCacheDir, name)].filter(Boolean) as string[];
  for (const c of candidates) if (existsSync(c)) return c;
  throw new Error(
    `${name} v${KUBERNETES_VERSION} not found in ${kubernetesCacheDir}; run \`npm run bootstrap\` first.`,
  );
}

export interface KubernetesServer {
  /** A kubeconfig with the admin credential (context `plana`): `export KUBECONFIG=<this>`. */
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  /** The admin's bearer token (group system:masters). */
  token: string;
  /** The CA that signed the serving certificate (PEM file). */
  caFile: string;
  /** Milliseconds from spawning kube-apiserver to its /readyz answering ok. */
  readyAfterMs: number;
  /** kube-apiserver's and etcd's process ids (for figures such as their RSS and CPU time). */
  pid: number;
  etcdPid: number;
  /** etcd's client URL (http://127.0.0.1:<port>; its v3 JSON gateway answers there too). */
  etcdUrl: string;
  stop(): Promise<void>;
}

/**
 * etcd and kube-apiserver under `dir`; the API server on `port` (a free one when omitted), with
 * `extraArgs` after its own (a test's, e.g. `--watch-cache=false`).
 */
export async function startKubernetes(opts: {
  dir: string;
  port?: number;
  extraArgs?: string[];
}): Promise<KubernetesServer> {
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  const [port, etcdClientPort, etcdPeerPort] = await Promise.all([opts.port ?? freePort(), freePort(), freePort()]);
  const etcd = await startEtcd(path.join(opts.dir, 'etcd'), etcdClientPort, etcdPeerPort);
  try {
    const files = ensureCredentials(opts.dir);
    const certDir = path.join(opts.dir, 'pki');
    const started = Date.now();
    const apiserver = new ManagedProcess(
      'kube-apiserver',
      findKubeBinary('kube-apiserver'),
      [...apiServerArgs({ port, etcdClientPort, certDir, files }), ...(opts.extraArgs ?? [])],
      path.join(opts.dir, 'kube-apiserver.log'),
      path.join(opts.dir, 'kube-apiserver.pid'),
    );
    const server = `https://127.0.0.1:${port}`;
    const caFile = path.join(certDir, 'apiserver.crt');
    await waitForReadyz(server, caFile, files.token, apiserver);
    const readyAfterMs = Date.now() - started;
    const kubeconfigPath = path.join(opts.dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeconfig(server, caFile, files.token), { mode: 0o600 });
    return {
      kubeconfigPath,
      server,
      token: files.token,
      caFile,
      readyAfterMs,
      pid: apiserver.child.pid ?? 0,
      etcdPid: etcd.child.pid ?? 0,
      etcdUrl: `http://127.0.0.1:${etcdClientPort}`,
      stop: async () => {
        await apiserver.stop();
        await etcd.stop();
      },
    };
  } catch (err) {
    await etcd.stop();
    throw err;
  }
}

async function startEtcd(dir: string, clientPort: number, peerPort: number): Promise<ManagedProcess> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const proc = new ManagedProcess(
    'etcd',
    process.env.ETCD ?? 'etcd',
    [
      '--name=plana',
      `--data-dir=${path.join(dir, 'data')}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=plana=${peer}`,
      '--logger=zap',
      '--log-level=warn',
      '--snapshot-count=10000',
    ],
    path.join(dir, 'etcd.log'),
    path.join(dir, 'etcd.pid'),
  );
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`etcd exited early; see ${proc.logFile}`);
    const healthy = await fetch(`${client}/health`)
      .then(async (r) => r.ok && ((await r.json()) as { health?: string }).health === 'true')
      .catch(() => false);
    if (healthy) return proc;
    await sleep(100);
  }
  await proc.stop();
  throw new Error(`etcd not healthy within 30 s; see ${proc.logFile}`);
}

interface Credentials {
  token: string;
  tokenFile: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  encryptionConfig: string;
}

/** The admin token, the service-account key pair and the encryption key: made once, then reused. */
function ensureCredentials(dir: string): Credentials {
  const file = (name: string) => path.join(dir, name);
  const once = (name: string, make: () => string) => {
    if (!existsSync(file(name))) writeFileSync(file(name), make(), { mode: 0o600 });
    return file(name);
  };
  const adminToken = once('admin-token', () => randomBytes(32).toString('base64url'));
  const token = readFileSync(adminToken, 'utf8').trim();
  const tokenFile = once('tokens.csv', () => `${token},plana-admin,plana-admin,"system:masters"\n`);
  if (!existsSync(file('service-account.key'))) {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(file('service-account.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(file('service-account.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  }
  const encryptionConfig = once('encryption-config.yaml', () =>
    [
      'apiVersion: apiserver.config.k8s.io/v1',
      'kind: EncryptionConfiguration',
      'resources:',
      '  - resources: [secrets]',
      '    providers:',
      '      - aescbc:',
      '          keys:',
      `            - name: key1`,
      `              secret: ${randomBytes(32).toString('base64')}`,
      '      - identity: {}',
      '',
    ].join('\n'),
  );
  return {
    token,
    tokenFile,
    serviceAccountKey: file('service-account.key'),
    serviceAccountPub: file('service-account.pub'),
    encryptionConfig,
  };
}

function apiServerArgs(o: { port: number; etcdClientPort: number; certDir: string; files: Credentials }): string[] {
  return [
    `--etcd-servers=http://127.0.0.1:${o.etcdClientPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${o.port}`,
    `--cert-dir=${o.certDir}`,
    '--authorization-mode=RBAC',
    `--token-auth-file=${o.files.tokenFile}`,
    `--service-account-key-file=${o.files.serviceAccountPub}`,
    `--service-account-signing-key-file=${o.files.serviceAccountKey}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    '--api-audiences=https://kubernetes.default.svc.cluster.local',
    `--encryption-provider-config=${o.files.encryptionConfig}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--profiling=false',
    '--v=0',
  ];
}

/** Polls /readyz with the admin token, trusting only the API server's own CA. */
async function waitForReadyz(server: string, caFile: string, token: string, proc: ManagedProcess, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (proc.exited) throw new Error(`kube-apiserver exited early; see ${proc.logFile}`);
    if (existsSync(caFile)) {
      const answer = await get(`${server}/readyz`, readFileSync(caFile), token).catch((err: Error) => err.message);
      if (answer === 'ok') return;
      last = answer;
    }
    await sleep(200);
  }
  throw new Error(`kube-apiserver not ready within ${timeoutMs} ms (${last}); see ${proc.logFile}`);
}

function get(url: string, ca: Buffer, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 2_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body.trim()));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

function kubeconfig(server: string, caFile: string, token: string): string {
  const ca = readFileSync(caFile).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '  - name: plana',
    '    cluster:',
    `      server: ${server}`,
    `      certificate-authority-data: ${ca}`,
    'users:',
    '  - name: plana-admin',
    '    user:',
    `      token: ${token}`,
    'contexts:',
    '  - name: plana',
    '    context: { cluster: plana, user: plana-admin, namespace: default }',
    'current-context: plana',
    '',
  ].join('\n');
}

/** Runs kubectl against a server's kubeconfig; returns its stdout (throws with stderr on failure). */
export function kubectl(kubeconfigPath: string, args: string[], input?: string): string {
  return execFileSync(findKubeBinary('kubectl'), args, {
    encoding: 'utf8',
    input,
    env: { ...process.env, KUBECONFIG: kubeconfigPath },
    stdio: ['pipe', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024, // `get --raw /metrics` is over a megabyte
  });
}
