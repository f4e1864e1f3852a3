/** What operators see of the service keys: every pair of the inventory and its keys (ids, states, use; never a key or a hash). */
import type { Client } from '@temporalio/client';
import { ranOutOfTime } from '../../lib/temporal.js';
import type { Queryable } from '../../lib/db.js';
import { SERVICE_KEY_INVENTORY, pairName, switchProofOf, type SwitchProof } from './inventory.js';
import { listKeys, type ServiceKeyRecord } from './key-registry.js';
import { nextRotation } from './schedules.js';

export interface ServiceKeyPairView {
  caller: string;
  target: string;
  /** Both ends exist in the platform today (keys are created on first start). */
  live: boolean;
  what: string;
  /** How a rotation proves the consumer switched (inventory.ts). */
  proof: SwitchProof;
  keys: Omit<ServiceKeyRecord, 'caller' | 'target'>[];
  /** The rotation running now (its workflow id), the last one that ended, and when the schedule rotates next. */
  rotation: {
    running: string | null;
    last: { workflowId: string; outcome: string; finishedAt: Date } | null;
    next: Date | null;
  };
}

/** How long the list waits for Temporal's schedules before it answers without their next times. */
const NEXT_ROTATION_DEADLINE_MS = 3_000;

export async function serviceKeyPairs(db: Queryable, temporal?: Client): Promise<ServiceKeyPairView[]> {
  const empty = () => ({ running: null, last: null, next: null });
  const byPair = new Map<string, ServiceKeyPairView>(
    SERVICE_KEY_INVENTORY.map((p) => [
      pairName(p),
      { caller: p.caller, target: p.target, live: p.live, what: p.what, proof: p.proof, keys: [], rotation: empty() },
    ]),
  );
  for (const { caller, target, ...key } of await listKeys(db)) {
    const name = pairName({ caller, target });
    // a pair registered outside the inventory (by hand, or a test's own caller) is shown too
    if (!byPair.has(name))
      byPair.set(name, {
        caller,
        target,
        live: true,
        what: 'not in the inventory',
        proof: switchProofOf({ caller, target }),
        keys: [],
        rotation: empty(),
      });
    byPair.get(name)!.keys.push(key);
  }
  // per pair: the unfinished rotation, and the newest finished one
  const { rows } = await db.query<{
    caller: string;
    target: string;
    workflow_id: string;
    outcome: string | null;
    finished_at: Date | null;
  }>(
    `SELECT DISTINCT ON (caller, target, finished_at IS NULL) caller, target, workflow_id, outcome, finished_at
       FROM service_key_rotations ORDER BY caller, target, finished_at IS NULL, n DESC`,
  );
  for (const r of rows) {
    const view = byPair.get(pairName(r));
    if (!view) continue;
    if (r.finished_at === null) view.rotation.running = r.workflow_id;
    else view.rotation.last = { workflowId: r.workflow_id, outcome: r.outcome ?? 'unknown', finishedAt: r.finished_at };
  }
  if (temporal) {
    // the schedules' next times, within a bound: a busy Temporal leaves `next` unknown (null)
    // rather than holding the whole list
    await temporal.connection
      .withDeadline(Date.now() + NEXT_ROTATION_DEADLINE_MS, () =>
        Promise.all(
          [...byPair.values()]
            .filter((p) => p.keys.some((k) => k.state === 'current'))
            .map(async (p) => {
              p.rotation.next = (await nextRotation(temporal, p)) ?? null;
            }),
        ),
      )
      .catch((err: unknown) => {
        if (!ranOutOfTime(err)) throw err;
      });
  }
  return [...byPair.values()];
}
