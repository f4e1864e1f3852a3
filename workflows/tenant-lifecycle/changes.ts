/**
 * The lifecycle's changes made while executions ran. Each is a patch (Temporal's `patched`), so a
 * history from before it replays the way it ran. A run started by code that has every one of them
 * records one patch for all of them, a baseline: one marker and one `TemporalChangeVersion` upsert
 * per run instead of one of each per change (they were 16 of a reconcile's 80 history events).
 * Runs from before a baseline check each change on its own, as they did.
 */
import { patched } from '@temporalio/workflow';

/** Every change, oldest first. A new one goes at the end and is checked with `has`. */
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

/**
 * The baselines, oldest first: each a patch that stands for the first `covers` changes. To fold
 * new changes in, add one that covers them; never remove or edit one (runs that recorded it replay).
 */
const baselines = [{ patch: 'lifecycle-changes-2026-11', covers: 12 }] as const;
/** The patch a run started by this code records. */
export const CURRENT_BASELINE = baselines.at(-1)!.patch;

export class LifecycleChanges {
  private constructor(private readonly covered: number) {}

  /**
   * Checked once, first thing in a run (a patch's answer holds only if asked at the same point on
   * replay): the newest baseline the run has, if any.
   */
  static ofThisRun(): LifecycleChanges {
    const baseline = [...baselines].reverse().find(({ patch }) => patched(patch));
    return new LifecycleChanges(baseline?.covers ?? 0);
  }

  /** Whether this run has `change`: through its baseline, or (a later change, a run from before) its own patch. */
  has(change: LifecycleChange): boolean {
    return lifecycleChanges.indexOf(change) < this.covered || patched(change);
  }
}
