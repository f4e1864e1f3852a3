/**
 * The CLI's tenant commands (apply, get, describe, delete) talk to the Kubernetes API, where
 * TenantClients live, with the credentials of KUBECONFIG (`npm run dev` prints its
 * `export KUBECONFIG=…` line), else the pod's service account (lib/kube-config.ts).
 */
import { config } from '../lib/config.js';
import { kubeCredentials } from '../lib/kube-config.js';
import { TenantClientApi } from '../domain/tenants/tenant-client-api.js';

export function tenantClientApi(): TenantClientApi {
  // read at call time, like PLANA_API_URL (the CLI also runs inside a process whose configuration was parsed before)
  const { kubeConfig, source } = kubeCredentials(process.env.KUBECONFIG || config().KUBECONFIG);
  return new TenantClientApi(kubeConfig, source);
}
