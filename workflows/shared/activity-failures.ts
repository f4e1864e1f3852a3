/**
 * What a workflow reads from an activity's failure: the cause the activity raised (its message,
 * and the type of a business failure), not the SDK's "Activity task failed" wrapper.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/** The message of an activity's failure: its cause, as the activity raised it. */
export function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

/** The type of the `ApplicationFailure` an activity raised (a business reason), if it raised one. */
export function failureType(err: unknown): string | undefined {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure
    ? (err.cause.type ?? undefined)
    : undefined;
}
