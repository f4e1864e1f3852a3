/**
 * One step of the lifecycle on one composed resource (a reconcile step, a teardown step): an
 * activity call and how its result updates the resource. The runner that goes through a table of
 * them (reconcile.ts, deprovision.ts) decides what a failure means there.
 */
import type { ResourceKind } from '../../domain/tenants/types.js';
import type { TenantState } from './state.js';

export interface ResourceStep<Context, Result> {
  /** Shown as the current step (and its search attribute) and in the recent steps. */
  name: string;
  /** The resource whose state the step sets, and on which a failure is kept. */
  resource: ResourceKind;
  /** What holds once the step has succeeded. */
  ensures: string;
  /** The activity call, with its options (the proxy is its retry policy). */
  call(context: Context): Promise<Result>;
  /** How the result updates the resource and the recent steps. */
  record(context: Context, result: Result): void;
}

/** A step of a table, with its result type taken from its activity call. */
export function resourceStep<Context, Result>(step: ResourceStep<Context, Result>): ResourceStep<Context, unknown> {
  return step;
}

/**
 * Runs one step: shown as the current step; its result recorded; a failure handed to `onFailure`
 * (with the activity's own message), never thrown. Then the status is mirrored.
 */
export async function runResourceStep<Context>(
  tenant: TenantState,
  context: Context,
  step: ResourceStep<Context, unknown>,
  onFailure: (err: unknown) => void,
): Promise<void> {
  tenant.setCurrentStep(step.name);
  try {
    step.record(context, await step.call(context));
  } catch (err) {
    onFailure(err);
  }
  await tenant.mirror();
}
