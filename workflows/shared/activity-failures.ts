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

/**
 * The type of the `ApplicationFailure` an activity raised (a business reason), if it raised one: the
 * cause of an activity's failure, or the failure itself when the activity ran locally (a local
 * activity's failure reaches the workflow as the activity raised it).
 */
export function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}
