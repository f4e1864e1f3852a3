/**
 * kubectl against the test run's Kubernetes API server, and TenantClients there for one test file:
 * each file labels its objects and runs its controllers with that label selector, so the files
 * running at once never reconcile each other's TenantClients.
 */
import { randomUUID } from 'node:crypto';
import { expect, inject } from 'vitest';
import { kubectl } from '../../scripts/local-servers.js';
import type { Condition } from '../../domain/tenants/types.js';
import type { TenantClientObject } from '../../services/tenant-controller/index.js';

export const kubeconfigPath = () => inject('kubeconfigPath');

/** kubectl's stdout, or its stderr when it fails. */
export function kube(args: string[], input?: string): { ok: boolean; out: string } {
  try {
    return { ok: true, out: kubectl(kubeconfigPath(), args, input) };
  } catch (err) {
    return { ok: false, out: String((err as { stderr?: string }).stderr) };
  }
}

/** A label for this file's TenantClients and the controller settings that select them. */
export function controllerScope() {
  const scope = `s${randomUUID().slice(0, 8)}`;
  return {
    label: `plana.dev/test-scope=${scope}`,
    env: {
      KUBECONFIG: kubeconfigPath(),
      TENANT_CONTROLLER_LABEL_SELECTOR: `plana.dev/test-scope=${scope}`,
      TENANT_CONTROLLER_LEASE: `tenant-controller-${scope}`,
      TENANT_CONTROLLER_LEASE_DURATION: '3s',
      KUBERNETES_NAMESPACE: 'default',
    },
  };
}

export function tenantClientJson(name: string, label: string, spec: Record<string, unknown> = {}): string {
  const [key, value] = label.split('=');
  return JSON.stringify({
    apiVersion: 'plana.dev/v1alpha1',
    kind: 'TenantClient',
    metadata: { name, labels: { [key!]: value } },
    spec: {
      subdomain: name,
      projectId: 42,
      tier: 'starter',
      erpVersion: '18',
      ownerEmail: `owner@${name}.test`,
      ownerName: 'Ada Owner',
      ...spec,
    },
  });
}

export function getTenantClient(name: string): TenantClientObject | undefined {
  const r = kube(['get', 'tenantclient', name, '-o', 'json']);
  return r.ok ? (JSON.parse(r.out) as TenantClientObject) : undefined;
}

export const kubeCondition = (obj: TenantClientObject | undefined, type: Condition['type']) =>
  obj?.status?.conditions?.find((c) => c.type === type);

/** Waits until the TenantClient (or its absence) satisfies `predicate`, read with kubectl. */
export function waitForTenantClient(
  name: string,
  predicate: (obj: TenantClientObject | undefined) => boolean,
  timeout = 60_000,
): Promise<TenantClientObject | undefined> {
  return pollTenantClient(async () => getTenantClient(name), predicate, timeout);
}

/** Reads the TenantClient with `read` until `predicate` holds; a timeout names what was seen last. */
export async function pollTenantClient(
  read: () => Promise<TenantClientObject | undefined>,
  predicate: (obj: TenantClientObject | undefined) => boolean,
  timeout: number,
): Promise<TenantClientObject | undefined> {
  let last: TenantClientObject | undefined;
  await expect
    .poll(
      async () => {
        last = await read();
        return predicate(last);
      },
      { timeout, interval: 250 },
    )
    .toBe(true)
    .catch((err: Error) => {
      throw new Error(`${err.message}\nlast seen: ${JSON.stringify(last?.status ?? last)}`);
    });
  return last;
}

/** The Events recorded on a TenantClient, oldest first. */
export function tenantClientEvents(name: string): { reason: string; message: string; type: string }[] {
  const r = kube([
    'get',
    'events',
    '-n',
    'default',
    '--field-selector',
    `involvedObject.kind=TenantClient,involvedObject.name=${name}`,
    '-o',
    'json',
  ]);
  const items = (
    JSON.parse(r.out) as { items: { reason: string; message: string; type: string; firstTimestamp: string }[] }
  ).items;
  return items.sort((a, b) => a.firstTimestamp.localeCompare(b.firstTimestamp));
}
