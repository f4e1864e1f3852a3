/**
 * Helpers for tests on the run's real Kubernetes API server (inject('kubeconfigPath'), the admin
 * credential): a namespace of the test's own, and a kubeconfig for a ServiceAccount (a token from
 * the TokenRequest API, as a pod gets one), so RBAC applies as it does in production; the
 * manifests of deploy/kubernetes as objects.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { kubectl } from '../../scripts/local-servers.js';

export const adminKubeconfig = () => inject('kubeconfigPath');

/** kubectl with the admin kubeconfig. */
export const kube = (args: string[], input?: string) => kubectl(adminKubeconfig(), args, input);

/** A new namespace (a bare API server has no namespace controller to delete one: they stay). */
export function testNamespace(prefix: string): string {
  const ns = `${prefix}-${randomBytes(3).toString('hex')}`;
  kube(['create', 'namespace', ns]);
  return ns;
}

/** The API server's address and CA (base64 PEM) from the admin kubeconfig. */
export function clusterOf(kubeconfigPath = adminKubeconfig()) {
  const field = (p: string) =>
    kubectl(kubeconfigPath, ['config', 'view', '--raw', '--minify', '-o', `jsonpath={.clusters[0].cluster.${p}}`]);
  return { server: field('server'), caData: field('certificate-authority-data') };
}

/** A kubeconfig file with a bearer token (and the cluster CA unless `withCa` is false). */
export function writeKubeconfig(file: string, token: string, opts: { withCa?: boolean; user?: string } = {}): string {
  const { server, caData } = clusterOf();
  const user = opts.user ?? 'test-user';
  const ca = opts.withCa === false ? '' : `\n      certificate-authority-data: ${caData}`;
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
  - name: plana
    cluster:
      server: ${server}${ca}
users:
  - name: ${user}
    user:
      token: ${token}
contexts:
  - name: plana
    context: { cluster: plana, user: ${user} }
current-context: plana
`,
    { mode: 0o600 },
  );
  return file;
}

/** A token of ServiceAccount `name` in `ns` (created when missing), from the TokenRequest API. */
export function serviceAccountToken(ns: string, name: string): string {
  kube(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } }),
  );
  return kube(['create', 'token', name, '-n', ns, '--duration=2h']).trim();
}

/** A kubeconfig (under `dir`) that acts as ServiceAccount `name` of `ns`. */
export function serviceAccountKubeconfig(dir: string, ns: string, name: string): string {
  return writeKubeconfig(path.join(dir, `${ns}-${name}.kubeconfig`), serviceAccountToken(ns, name), {
    user: `system:serviceaccount:${ns}:${name}`,
  });
}

export const manifestsDir = path.resolve(import.meta.dirname, '../../deploy/kubernetes/base');

/** The objects of one manifest file of deploy/kubernetes. */
export function manifest(file: string): KubeObject[] {
  return parseAllDocuments(readFileSync(path.join(manifestsDir, file), 'utf8'))
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => o !== null);
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** The manifests' Role for the Secrets writers, in `ns`, bound to ServiceAccount `sa` of `ns`. */
export function applySecretWriterRole(ns: string, sa: string) {
  const role = manifest('service-keys-rbac.yaml').find((o) => o.kind === 'Role')!;
  kube(['apply', '-f', '-'], JSON.stringify({ ...role, metadata: { ...role.metadata, namespace: ns } }));
  kube([
    'create',
    'rolebinding',
    `${sa}-secrets`,
    '-n',
    ns,
    `--role=${role.metadata.name}`,
    `--serviceaccount=${ns}:${sa}`,
  ]);
}
