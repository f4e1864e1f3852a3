/**
 * Installs the TenantClient CustomResourceDefinition (domain/tenants/tenant-client-crd.ts) into a
 * Kubernetes API server, with the namespaces of deploy/kubernetes/base/namespaces.yaml (a tenant's
 * composed objects live in plana-odoo-<erpVersion>), and waits until it is served (its condition
 * Established is True): `npm run dev` and the test run do this on their private API server. Run directly, prints the CRD as YAML (for manifests):
 * `npx tsx scripts/tenant-client-crd.ts > crd.yaml`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { TENANT_CLIENT_CRD_NAME, tenantClientCrd } from '../domain/tenants/tenant-client-crd.js';
import { kubectl } from './local-kubernetes.js';

export async function installTenantClientCrd(kubeconfigPath: string): Promise<void> {
  kubectl(kubeconfigPath, [
    'apply',
    '-f',
    fileURLToPath(new URL('../deploy/kubernetes/base/namespaces.yaml', import.meta.url)),
  ]);
  kubectl(
    kubeconfigPath,
    ['apply', '--server-side', '--force-conflicts', '-f', '-'],
    JSON.stringify(tenantClientCrd()),
  );
  await waitForCrdEstablished(
    () => JSON.parse(kubectl(kubeconfigPath, ['get', `crd/${TENANT_CLIENT_CRD_NAME}`, '-o', 'json'])) as CrdState,
    TENANT_CLIENT_CRD_NAME,
  );
}

/** What of a CustomResourceDefinition tells whether it is served. */
export interface CrdState {
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] | null };
}

/**
 * Polls the CRD until its condition Established is True. Just after it is applied it has no
 * conditions at all (`kubectl wait --for=condition=Established` then fails with ".status.conditions
 * accessor error: <nil>" instead of waiting): that, a condition not True yet, or a read that fails,
 * is asked again until `timeoutMs`.
 */
export async function waitForCrdEstablished(
  read: () => CrdState | Promise<CrdState>,
  name: string,
  { timeoutMs = 60_000, intervalMs = 100 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no status yet';
  for (;;) {
    try {
      const established = (await read()).status?.conditions?.find((c) => c.type === 'Established');
      if (established?.status === 'True') return;
      if (established)
        last = `Established=${established.status} (${established.reason ?? ''}: ${established.message ?? ''})`;
    } catch (err) {
      last = (err as Error).message.trim();
    }
    if (Date.now() >= deadline)
      throw new Error(`The CustomResourceDefinition ${name} is not Established after ${timeoutMs / 1000} s: ${last}`);
    await sleep(intervalMs);
  }
}

export const tenantClientCrdYaml = () => stringify(tenantClientCrd(), { lineWidth: 0 });

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(tenantClientCrdYaml());
