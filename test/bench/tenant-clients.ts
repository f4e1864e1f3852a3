/**
 * TenantClients as the benches drive them: created on the Kubernetes API like `kubectl apply` of a
 * starter/18 tenant, and Ready read from the status there (what `kubectl get tenantclients` shows).
 */
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';

const GVR = { group: 'plana.dev', version: 'v1alpha1', plural: 'tenantclients' };

export const ownerOf = (tenant: string) => `owner@${tenant}.test`;

export function tenantClientsApi(kubeconfigPath: string): CustomObjectsApi {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return kc.makeApiClient(CustomObjectsApi);
}

/** Creates a starter/18 TenantClient named `name`, owned by ownerOf(name). */
export async function createTenantClient(api: CustomObjectsApi, name: string, ownerName: string): Promise<void> {
  await api.createClusterCustomObject({
    ...GVR,
    body: {
      apiVersion: 'plana.dev/v1alpha1',
      kind: 'TenantClient',
      metadata: { name },
      spec: { subdomain: name, projectId: 1, tier: 'starter', erpVersion: '18', ownerEmail: ownerOf(name), ownerName },
    },
  });
}

/** The names of the TenantClients whose status says Ready=True for their current generation. */
export async function readyTenantClients(api: CustomObjectsApi): Promise<string[]> {
  type Listed = {
    items: {
      metadata: { name: string; generation: number };
      status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
    }[];
  };
  const listed = (await api.listClusterCustomObject(GVR)) as Listed;
  return listed.items
    .filter(
      (o) =>
        o.status?.observedGeneration === o.metadata.generation &&
        o.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .map((o) => o.metadata.name);
}
