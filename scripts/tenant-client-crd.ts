/**
 * Installs the TenantClient CustomResourceDefinition (domain/tenants/tenant-client-crd.ts) into a
 * Kubernetes API server, with the namespaces of deploy/kubernetes/namespaces.yaml (a tenant's
 * composed objects live in plana-odoo-<erpVersion>), and waits until it is served: `npm run dev` and the test run do this on
 * their private API server. Run directly, prints the CRD as YAML (for manifests):
 * `npx tsx scripts/tenant-client-crd.ts > crd.yaml`.
 */
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { TENANT_CLIENT_CRD_NAME, tenantClientCrd } from '../domain/tenants/tenant-client-crd.js';
import { kubectl } from './local-kubernetes.js';

export function installTenantClientCrd(kubeconfigPath: string): void {
  kubectl(kubeconfigPath, [
    'apply',
    '-f',
    fileURLToPath(new URL('../deploy/kubernetes/namespaces.yaml', import.meta.url)),
  ]);
  kubectl(
    kubeconfigPath,
    ['apply', '--server-side', '--force-conflicts', '-f', '-'],
    JSON.stringify(tenantClientCrd()),
  );
  kubectl(kubeconfigPath, ['wait', '--for=condition=Established', '--timeout=60s', `crd/${TENANT_CLIENT_CRD_NAME}`]);
}

export const tenantClientCrdYaml = () => stringify(tenantClientCrd(), { lineWidth: 0 });

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(tenantClientCrdYaml());
