/**
 * TenantClients as the benches drive them: created on the Kubernetes API like `kubectl apply` of a
 * starter/18 tenant, and Ready read from the status there (what `kubectl get tenantclients` shows).
 */
import { CustomObjectsApi, KubeConfig, makeInformer, type KubernetesListObject } from '@kubernetes/client-node';

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

type Listed = {
  items: {
    metadata: { name: string; generation: number };
    status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] };
  }[];
};

const isReady = (o: Listed['items'][number]) =>
  o.status?.observedGeneration === o.metadata.generation &&
  Boolean(o.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));

/** The names of the TenantClients whose status says Ready=True for their current generation. */
export async function readyTenantClients(api: CustomObjectsApi): Promise<string[]> {
  const listed = (await api.listClusterCustomObject(GVR)) as Listed;
  return listed.items.filter(isReady).map((o) => o.metadata.name);
}

/**
 * Watches the TenantClients (an informer: a list, then a watch) and calls `onReady` once per name
 * the moment its status says Ready=True for its current generation: exact times, without listing
 * every object every few milliseconds (which would load the API server being measured).
 */
export async function watchReady(
  kubeconfigPath: string,
  onReady: (name: string) => void,
): Promise<() => Promise<void>> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const api = kc.makeApiClient(CustomObjectsApi);
  const informer = makeInformer<Listed['items'][number]>(
    kc,
    `/apis/${GVR.group}/${GVR.version}/${GVR.plural}`,
    () => api.listClusterCustomObject(GVR) as Promise<KubernetesListObject<Listed['items'][number]>>,
  );
  const seen = new Set<string>();
  const check = (o: Listed['items'][number]) => {
    if (!seen.has(o.metadata.name) && isReady(o)) {
      seen.add(o.metadata.name);
      onReady(o.metadata.name);
    }
  };
  informer.on('add', check);
  informer.on('update', check);
  let stopped = false;
  // (stopping aborts the watch, which reports itself as an error: not restarted then)
  informer.on('error', () => setTimeout(() => stopped || void informer.start().catch(() => undefined), 1_000));
  await informer.start();
  return () => {
    stopped = true;
    return informer.stop();
  };
}
