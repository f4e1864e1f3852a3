/**
 * The TenantClient's Events (what `kubectl describe` shows): the controller's own (Applied,
 * Deleting, FinalizerRemoved, …) and one per workflow step. A cluster-scoped object's Events live
 * in namespace `default`. An Event is a courtesy: one not recorded never blocks the reconcile.
 *
 * An Event's timestamps keep whole seconds only, and `kubectl describe` sorts by them, keeping the
 * API server's order (by name) among equal ones. So each Event is named as client-go's recorder
 * names them, `<object>.<UnixNano in hex>`, from a time that strictly increases per object: the
 * list comes back in the order the Events happened and kubectl leaves it so.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { Logger } from '../../lib/logger.js';
import type { TenantClientObject } from '../../domain/tenants/tenant-client-api.js';
import { TENANT_CLIENT_GROUP } from '../../domain/tenants/tenant-client-crd.js';
import { TENANT_CLIENT_API_VERSION, TENANT_CLIENT_KIND, type StepRecord } from '../../domain/tenants/types.js';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';

export class TenantClientEvents {
  /** Per object (uid): the last Event's time, in microseconds since the epoch. */
  private readonly lastMicros = new Map<string, number>();

  constructor(
    private readonly core: CoreV1Api,
    private readonly log: Logger,
    private readonly identity: string,
  ) {}

  /** A workflow step as an Event, its reason the step's name in CamelCase; true once recorded. */
  step(obj: TenantClientObject, step: StepRecord, uiLink: string): Promise<boolean> {
    const reason = step.step.replace(/(^|[-_ :])(\w)/g, (_m, _s, c: string) => c.toUpperCase()).replace(/\W/g, '');
    return this.record(
      obj,
      step.outcome === 'failed' ? 'Warning' : 'Normal',
      reason || 'Step',
      `${step.outcome}: ${step.message} (workflow ${tenantWorkflowId(obj.metadata.name)}, ${uiLink})`,
      step.at,
    );
  }

  /** An Event on the TenantClient; true once recorded. */
  async record(
    obj: TenantClientObject,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    at?: string,
  ): Promise<boolean> {
    const micros = this.nextMicros(obj.metadata.uid, new Date(at ?? Date.now()));
    const time = new Date(Math.floor(micros / 1000));
    try {
      await this.core.createNamespacedEvent({
        namespace: 'default',
        body: {
          metadata: {
            name: `${obj.metadata.name}.${(BigInt(micros) * 1000n).toString(16).padStart(16, '0')}`,
            namespace: 'default',
          },
          involvedObject: {
            apiVersion: TENANT_CLIENT_API_VERSION,
            kind: TENANT_CLIENT_KIND,
            name: obj.metadata.name,
            uid: obj.metadata.uid,
            resourceVersion: obj.metadata.resourceVersion,
          },
          type,
          reason: reason.slice(0, 128),
          message: message.slice(0, 1024),
          firstTimestamp: time,
          lastTimestamp: time,
          count: 1,
          source: { component: 'tenant-controller' },
          reportingComponent: `${TENANT_CLIENT_GROUP}/tenant-controller`,
          reportingInstance: this.identity.slice(0, 128),
        },
      });
      return true;
    } catch (err) {
      this.log.warn({ err: (err as Error).message, reason }, 'event not recorded');
      return false;
    }
  }

  /** `at` in microseconds, made later than the object's previous Event by a microsecond where needed. */
  private nextMicros(uid: string, at: Date): number {
    const micros = Math.max(at.getTime() * 1000, (this.lastMicros.get(uid) ?? 0) + 1);
    this.lastMicros.set(uid, micros);
    return micros;
  }
}
