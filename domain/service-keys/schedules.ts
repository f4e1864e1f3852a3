/**
 * The annual rotation of every live pair: one Temporal Schedule per pair,
 * `rotate-annual:<caller>:<target>`, ensured by the worker (and `npm run dev`) at start-up. Each
 * action runs `annualServiceKeyRotation`, which starts the numbered `rotate:<caller>:<target>:<n>`
 * like the CLI and the ops API do, so the per-pair lock applies to scheduled rotations too (a pair
 * already rotating is skipped, not rotated twice). Pairs are spread over the interval by a fixed
 * offset from their name, so they do not all rotate in the same minute.
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { ANNUAL_ROTATION_WORKFLOW, rotationScheduleId } from './workflow-contract.js';
import { SERVICE_KEY_INVENTORY } from './inventory.js';
import { describeScheduleIfPresent } from '../../lib/temporal.js';
import { DAY_MS, ensureIntervalSchedule, type ScheduleOutcome } from '../temporal-schedule.js';

type Pair = { caller: string; target: string };

/** A stable offset in [0, every) from the pair's name, whole minutes. */
export function scheduleOffsetMs(pair: Pair, everyMs: number): number {
  const h = createHash('sha256').update(`${pair.caller}:${pair.target}`).digest().readUInt32BE(0);
  const minutes = Math.max(1, Math.floor(everyMs / 60_000));
  return (h % minutes) * 60_000;
}

export function ensureRotationSchedule(
  client: Client,
  pair: Pair,
  opts: { taskQueue: string; everyDays: number },
): Promise<ScheduleOutcome> {
  const everyMs = opts.everyDays * DAY_MS;
  return ensureIntervalSchedule(client, {
    scheduleId: rotationScheduleId(pair.caller, pair.target),
    everyMs,
    offsetMs: scheduleOffsetMs(pair, everyMs),
    workflowType: ANNUAL_ROTATION_WORKFLOW,
    taskQueue: opts.taskQueue,
    args: [pair],
    summary: `Scheduled rotation of the ${pair.caller} → ${pair.target} service key`,
    note: `${pair.caller} → ${pair.target}: rotate every ${opts.everyDays} days (§5.4)`,
    catchupWindow: '1 day',
  });
}

/** Ensures the schedule of every live pair of the inventory. */
export async function ensureRotationSchedules(
  client: Client,
  opts: { taskQueue: string; everyDays: number },
  pairs: readonly Pair[] = SERVICE_KEY_INVENTORY.filter((p) => p.live),
) {
  const results: Record<string, string> = {};
  for (const p of pairs)
    results[rotationScheduleId(p.caller, p.target)] = await ensureRotationSchedule(client, p, opts);
  return results;
}

/** When the pair's schedule next rotates it (undefined without a schedule). */
export async function nextRotation(client: Client, pair: Pair): Promise<Date | undefined> {
  const d = await describeScheduleIfPresent(client, rotationScheduleId(pair.caller, pair.target));
  if (!d || d.state.paused) return undefined;
  return d.info.nextActionTimes[0];
}
