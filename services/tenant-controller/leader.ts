/**
 * Leader election through a coordination.k8s.io/v1 Lease, as Kubernetes' own controllers do it:
 * the leader renews the Lease every `renewMs`; another replica takes it over only once it has not
 * been renewed for its leaseDurationSeconds. Every write carries the Lease's resourceVersion, so of
 * two replicas racing for it exactly one wins (the other gets 409 Conflict).
 */
import { ApiException, CoordinationV1Api, V1MicroTime, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../lib/logger.js';

export interface LeaderElection {
  isLeader(): boolean;
  stop(): Promise<void>;
}

interface LeaseOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  log: Logger;
  onChange?: (leading: boolean) => void;
}

/** The Lease's spec as `identity` holds it from now (a takeover counts as a transition). */
function heldLeaseSpec(identity: string, durationSeconds: number, previous?: V1Lease) {
  const now = new V1MicroTime();
  const holder = previous?.spec?.holderIdentity;
  return {
    holderIdentity: identity,
    leaseDurationSeconds: durationSeconds,
    renewTime: now,
    acquireTime: holder === identity ? (previous?.spec?.acquireTime ?? now) : now,
    leaseTransitions: (previous?.spec?.leaseTransitions ?? 0) + (holder && holder !== identity ? 1 : 0),
  };
}

/** Creates, renews or takes over the expired Lease; false while another replica holds it. */
async function tryAcquireOrRenew(
  api: CoordinationV1Api,
  opts: LeaseOptions,
  durationSeconds: number,
): Promise<boolean> {
  let lease: V1Lease;
  try {
    lease = await api.readNamespacedLease({ name: opts.name, namespace: opts.namespace });
  } catch (err) {
    if (!(err instanceof ApiException) || err.code !== 404) throw err;
    await api.createNamespacedLease({
      namespace: opts.namespace,
      body: {
        metadata: { name: opts.name, namespace: opts.namespace },
        spec: heldLeaseSpec(opts.identity, durationSeconds),
      },
    });
    return true;
  }
  const holder = lease.spec?.holderIdentity;
  const renewed = lease.spec?.renewTime ? new Date(lease.spec.renewTime).getTime() : 0;
  const expired = Date.now() > renewed + (lease.spec?.leaseDurationSeconds ?? durationSeconds) * 1000;
  if (holder && holder !== opts.identity && !expired) return false;
  await api.replaceNamespacedLease({
    name: opts.name,
    namespace: opts.namespace,
    body: { ...lease, spec: heldLeaseSpec(opts.identity, durationSeconds, lease) },
  });
  return true;
}

/** Hands the Lease over at once on a clean stop: the next replica need not wait for it to expire. */
async function releaseLease(api: CoordinationV1Api, opts: LeaseOptions): Promise<void> {
  try {
    const lease = await api.readNamespacedLease({ name: opts.name, namespace: opts.namespace });
    if (lease.spec?.holderIdentity === opts.identity)
      await api.replaceNamespacedLease({
        name: opts.name,
        namespace: opts.namespace,
        body: { ...lease, spec: { ...lease.spec, holderIdentity: undefined, renewTime: undefined } },
      });
  } catch {
    /* it expires on its own */
  }
}

export function electLeader(kc: KubeConfig, opts: LeaseOptions): LeaderElection {
  const api = kc.makeApiClient(CoordinationV1Api);
  const renewMs = Math.max(200, Math.floor(opts.leaseDurationMs / 3));
  const durationSeconds = Math.max(1, Math.round(opts.leaseDurationMs / 1000));
  let leading = false;
  /** When we last renewed: we stop acting as leader once the Lease may have expired for the others. */
  let renewedAt = 0;
  let stopped = false;
  const stopping = new AbortController();

  const setLeading = (next: boolean) => {
    if (next === leading) return;
    leading = next;
    opts.log.info({ lease: opts.name, identity: opts.identity }, next ? 'leading' : 'no longer leading');
    opts.onChange?.(next);
  };

  const loop = (async () => {
    while (!stopped) {
      const attemptAt = Date.now();
      try {
        const ok = await tryAcquireOrRenew(api, opts, durationSeconds);
        if (ok) renewedAt = attemptAt;
        setLeading(ok);
      } catch (err) {
        // a conflict is a lost race; anything else (API server away) keeps leadership only while
        // the Lease we hold cannot have expired for the others
        if (!(err instanceof ApiException && err.code === 409))
          opts.log.warn({ err: (err as Error).message, lease: opts.name }, 'lease not renewed');
        if (Date.now() - renewedAt > opts.leaseDurationMs - renewMs) setLeading(false);
      }
      await sleep(renewMs, undefined, { signal: stopping.signal }).catch(() => {});
    }
  })();

  return {
    isLeader: () => leading && Date.now() - renewedAt < opts.leaseDurationMs - renewMs,
    async stop() {
      stopped = true;
      stopping.abort();
      await loop;
      if (leading) await releaseLease(api, opts);
      setLeading(false);
    },
  };
}
