/**
 * The retry intervals of an activity policy. Tests shorten every interval through the workflow's
 * settings (`retryIntervals`); production keeps the policy's own.
 */
export interface RetryIntervalOverride {
  initialMs: number;
  maximumMs: number;
}

export function retryIntervals(override: RetryIntervalOverride | undefined, initial: string, maximum: string) {
  return override
    ? { initialInterval: override.initialMs, maximumInterval: override.maximumMs }
    : { initialInterval: initial, maximumInterval: maximum };
}
