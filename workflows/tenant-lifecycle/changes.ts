/**
 * The lifecycle's changes made while executions ran. Each is a patch (Temporal's `patched`), so a
 * history from before it replays the way it ran. A run started by code that has every one of them
 * records one patch for all of them, `lifecycle-changes-2026-11`: one marker and one
 * `TemporalChangeVersion` upsert per run instead of one of each per change (they were 16 of a
 * reconcile's 80 history events). Runs from before that patch check each change as they did.
 */
import { patched } from '@temporalio/workflow';

/** Every change; a new one is added here, checked with `has`, and needs a new name for the patch that stands for all. */
export const lifecycleChanges = [
  'tier-modules',
  'api-user-through-the-route',
  'erp-sign-in',
  'erp-sign-in-module',
  'install-from-scratch',
  'probe-while-ready',
  'reconcile-what-woke-the-last-run',
  'no-provisioned-event-when-cancelled',
  'quick-step-heartbeats',
  'quick-steps-local',
  'must-finish-heartbeats',
  'status-published-when-waiting',
] as const;
export type LifecycleChange = (typeof lifecycleChanges)[number];

/** The patch a run records when it has every change above. */
export const ALL_LIFECYCLE_CHANGES = 'lifecycle-changes-2026-11';

export class LifecycleChanges {
  private constructor(private readonly allOfThem: boolean) {}

  /** Checked once, first thing in a run (a patch's answer holds for the run only if asked at the same point on replay). */
  static ofThisRun(): LifecycleChanges {
    return new LifecycleChanges(patched(ALL_LIFECYCLE_CHANGES));
  }

  /** Whether this run has `change`: all of them, or (a run from before) its own patch. */
  has(change: LifecycleChange): boolean {
    return this.allOfThem || patched(change);
  }
}
