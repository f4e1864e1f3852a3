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
  /**
   * A quick step (a local activity inside the workflow task that reaches it): neither a value of the
   * `CurrentStep` search attribute nor published on its own (the next step or wait does both).
   */
  quick?: boolean;
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
 * (with the activity's own message), never thrown. A step the workflow waits on publishes the status
 * first (with what the steps before it changed), so the published status names the step being waited on; a
 * quick step publishes first the result of a waited-on step just before it (so a quick step that hangs
 * leaves that result visible); a quick step's own result is published by the next step or wait.
 */
export async function runResourceStep<Context>(
  tenant: TenantState,
  context: Context,
  step: ResourceStep<Context, unknown>,
  onFailure: (err: unknown) => void,
): Promise<void> {
  const quick = step.quick === true;
  if (quick) await tenant.publishWaitedStepResult();
  tenant.setCurrentStep(step.name, { quick });
  if (!quick) await tenant.publish();
  try {
    step.record(context, await step.call(context));
  } catch (err) {
    onFailure(err);
  }
  if (!quick) tenant.recordedWaitedStep();
}
