/**
 * The CLI's tenant commands (apply, get, describe, delete) talk to the Kubernetes API, where
 * TenantClients live, with the credentials of KUBECONFIG; when it is not set, those of the running
 * `npm run dev` (its kubeconfig DATA_DIR/kubernetes/kubeconfig, `.data/` of the repository by
 * default), saying so on stderr, as kubectl falls back to ~/.kube/config; else the pod's service
 * account (lib/kube-config.ts).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { config } from '../lib/config.js';
import { AppError } from '../lib/errors.js';
import { kubeCredentials } from '../lib/kube-config.js';
import { TenantClientApi } from '../domain/tenants/tenant-client-api.js';

const repository = fileURLToPath(new URL('..', import.meta.url));

/** Where `npm run dev` writes its kubeconfig: DATA_DIR (relative to the repository) / kubernetes / kubeconfig. */
export function devKubeconfigPath(): string {
  // read at call time, like KUBECONFIG (the CLI also runs inside a process whose configuration was parsed before)
  return path.resolve(repository, process.env.DATA_DIR || config().DATA_DIR, 'kubernetes', 'kubeconfig');
}

export function tenantClientApi(): TenantClientApi {
  const explicit = process.env.KUBECONFIG || config().KUBECONFIG;
  if (explicit) {
    const { kubeConfig, source } = kubeCredentials(explicit);
    return new TenantClientApi(kubeConfig, source);
  }
  const dev = devKubeconfigPath();
  if (existsSync(dev)) {
    process.stderr.write(`Using the kubeconfig of npm run dev: ${dev} (KUBECONFIG is not set)\n`);
    const { kubeConfig, source } = kubeCredentials(dev);
    return new TenantClientApi(kubeConfig, source);
  }
  if (!process.env.KUBERNETES_SERVICE_HOST)
    throw new AppError(
      'UNAVAILABLE',
      `No Kubernetes credentials: set KUBECONFIG, or start \`npm run dev\` (its kubeconfig ${dev} does not exist), or run in a pod (KUBERNETES_SERVICE_HOST is not set).`,
    );
  const { kubeConfig, source } = kubeCredentials(undefined);
  return new TenantClientApi(kubeConfig, source);
}
