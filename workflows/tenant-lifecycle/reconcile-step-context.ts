/**
 * What the steps of one reconcile (reconcile-steps.ts, database-steps.ts) share: their context and
 * the row type of their table.
 */
import type { TenantClientSpec } from '../../domain/tenants/types.js';
import type { LifecycleActivities } from './activities.js';
import { resourceStep, type ResourceStep } from './resource-step.js';
import type { TenantState } from './state.js';

/** What the steps of one reconcile work on: the spec as it was when the reconcile began. */
export interface ReconcileStepContext {
  tenant: TenantState;
  activities: LifecycleActivities;
  name: string;
  spec: TenantClientSpec;
  /** The reserved hostname. */
  host: string;
  /** The tenant database (named like the host). */
  database: string;
  /** The route's namespace, plana-odoo-<erpVersion>. */
  namespace: string;
  /** How long a tenant has to turn Ready once it makes progress (the apply, a finished install). */
  readyDeadlineMs: number;
  /** Set by the clone step when the template of tier × version is missing: the database is installed from scratch. */
  missingTemplate?: string;
}

export type ReconcileStep = ResourceStep<ReconcileStepContext, unknown>;

/** A row of the table, its result's type taken from its activity call. */
export const reconcileStep = <Result>(step: ResourceStep<ReconcileStepContext, Result>): ReconcileStep =>
  resourceStep(step);
