/**
 * Service-key rotation (§5.4): starting one (numbered, one at a time per pair) and the
 * idempotent steps the rotation workflow's activities run (workflows/rotate-service-key.ts).
 *
 * The per-pair lock is a row of service_key_rotations (migration 510): at most one unfinished row
 * per pair. A second start while the holder's workflow runs is refused (409); a holder whose
 * workflow ended without finishing (terminated, failed) is marked `abandoned` and the new rotation
 * goes ahead. Each step is keyed by the rotation's row: the new key is generated, registered
 * `pending` at the target and stored as a new secret version in one transaction that also records
 * its key id and version on the row, so a retried step finds them there and makes no second key.
 * Nothing here returns, logs or stores a key in the clear (the secret store seals it).
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type pg from 'pg';
import { withTransaction, type Queryable } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { searchAttributes } from '../workflow-search-attributes.js';
import {
  ROTATE_SERVICE_KEY_WORKFLOW,
  rotationWorkflowId,
  type RotateServiceKeyWorkflow,
  type RotationReason,
  type RotationSettings,
} from './workflow-contract.js';
import { switchProofOf, type ServiceKeyPair } from './inventory.js';
import { createKey, revokeKey } from './key-registry.js';
import type { TransactionalSecretStoreWriter } from './secret-store.js';

export type Pair = { caller: string; target: string };

export { rotationSettings } from './rotation-settings.js';

export interface RotationStarted {
  caller: string;
  target: string;
  n: number;
  reason: RotationReason;
  workflowId: string;
  runId: string;
}

/** How long a committed rotation row may wait for its workflow to start before it counts as abandoned. */
const START_GRACE_MS = 60_000;

type RotationStartDeps = {
  pool: pg.Pool;
  temporal: Client;
  taskQueue: string;
  settings: RotationSettings;
  inventory?: readonly ServiceKeyPair[];
};

const rotatedAlready = (pair: Pair) =>
  new AppError(
    'CONFLICT',
    `${pair.caller} → ${pair.target} is being rotated already; one rotation of a pair at a time.`,
  );

/**
 * Starts `rotate:<caller>:<target>:<n>`. 404 for a pair without a current key, 409 while another
 * rotation of the pair runs (the message names it).
 */
export async function startRotation(
  deps: RotationStartDeps,
  pair: Pair,
  reason: RotationReason,
): Promise<RotationStarted> {
  const proof = switchProofOf(pair, deps.inventory);
  const n = await lockPair(deps, pair, reason);
  return startRotationWorkflow(deps, pair, { n, reason, proof });
}

/**
 * Takes the pair's lock: the rotation's row, committed before its workflow starts (the workflow's
 * first activity reads it). Answers the rotation's number.
 */
async function lockPair(deps: RotationStartDeps, pair: Pair, reason: RotationReason): Promise<number> {
  try {
    return await withTransaction(deps.pool, async (db) => {
      const { rows: current } = await db.query(
        `SELECT 1 FROM service_keys WHERE caller = $1 AND target = $2 AND state = 'current'`,
        [pair.caller, pair.target],
      );
      if (!current.length)
        throw new AppError('NOT_FOUND', `${pair.caller} → ${pair.target} has no current service key to rotate.`);
      await releaseEndedHolder(db, deps.temporal, pair);
      const { rows } = await db.query<{ n: number }>(
        `INSERT INTO service_key_rotations (workflow_id, caller, target, n, reason)
         SELECT 'rotate:' || $1 || ':' || $2 || ':' || (COALESCE(MAX(n), 0) + 1), $1, $2, COALESCE(MAX(n), 0) + 1, $3
           FROM service_key_rotations WHERE caller = $1 AND target = $2
         RETURNING n`,
        [pair.caller, pair.target, reason],
      );
      return rows[0]!.n;
    });
  } catch (err) {
    // two starts at once: the second waits on the first's row (partial unique index), then collides
    if ((err as { code?: string }).code === '23505') throw rotatedAlready(pair);
    throw err;
  }
}

/**
 * The pair's unfinished rotation, if any: 409 while its workflow runs (or is still starting);
 * marked `abandoned` when its workflow ended without finishing, or never started.
 */
async function releaseEndedHolder(db: pg.PoolClient, temporal: Client, pair: Pair): Promise<void> {
  const { rows: open } = await db.query<{ workflow_id: string; starting: boolean }>(
    `SELECT workflow_id, started_at > now() - make_interval(secs => $3::double precision / 1000) AS starting
       FROM service_key_rotations WHERE caller = $1 AND target = $2 AND finished_at IS NULL FOR UPDATE`,
    [pair.caller, pair.target, START_GRACE_MS],
  );
  const holder = open[0]?.workflow_id;
  if (!holder) return;
  const status = await workflowStatus(temporal, holder);
  // a row without its workflow yet is a start in progress (committed, not started yet), unless
  // it is older than the grace period: then its starter died between the two
  if (status === 'RUNNING' || (status === 'NOT_FOUND' && open[0]!.starting)) {
    throw new AppError(
      'CONFLICT',
      `${pair.caller} → ${pair.target} is being rotated already (${holder}); one rotation of a pair at a time.`,
    );
  }
  // its workflow ended without finishing, or never started (the starter died after the commit)
  await db.query(
    `UPDATE service_key_rotations SET finished_at = now(), outcome = 'abandoned', message = $2 WHERE workflow_id = $1 AND finished_at IS NULL`,
    [holder, `the workflow ended without finishing (${status})`],
  );
}

/** Starts the rotation's workflow; if that fails, releases the pair's lock so the pair can be rotated again. */
async function startRotationWorkflow(
  deps: RotationStartDeps,
  pair: Pair,
  { n, reason, proof }: { n: number; reason: RotationReason; proof: ReturnType<typeof switchProofOf> },
): Promise<RotationStarted> {
  const { caller, target } = pair;
  const workflowId = rotationWorkflowId(caller, target, n);
  try {
    const handle = await deps.temporal.workflow.start<RotateServiceKeyWorkflow>(ROTATE_SERVICE_KEY_WORKFLOW, {
      workflowId,
      taskQueue: deps.taskQueue,
      args: [{ ...pair, n, reason, settings: deps.settings, proof }],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowIdConflictPolicy: 'FAIL',
      staticSummary: `Rotate the ${caller} → ${target} service key (#${n}, ${reason})`,
      staticDetails:
        `Steps: new key registered pending at ${target} → stored as a new secret version → made current for ${caller} → ` +
        `verified from ${target}'s usage records (switch proof: ${proof}${reason === 'exposure' ? '; exposure: no quiet period' : ''}) → promoted, old key revoked. Rolls back if ${caller} has not switched ` +
        `within ${Math.round(deps.settings.deadlineMs / 1000)} s.`,
      typedSearchAttributes: [{ key: searchAttributes.currentStep, value: 'queued' }],
    });
    return { ...pair, n, reason, workflowId, runId: handle.firstExecutionRunId };
  } catch (err) {
    await finishRotation(deps.pool, workflowId, 'abandoned', {
      message: `the workflow did not start: ${(err as Error).message}`,
    });
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw rotatedAlready(pair);
    throw err;
  }
}

async function workflowStatus(temporal: Client, workflowId: string): Promise<string> {
  try {
    return (await temporal.workflow.getHandle(workflowId).describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 'NOT_FOUND';
    throw err;
  }
}

interface RotationRow {
  workflow_id: string;
  caller: string;
  target: string;
  old_key_id: string | null;
  old_version: number | null;
  new_key_id: string | null;
  new_version: number | null;
  finished_at: Date | null;
}

async function lockRow(db: Queryable, workflowId: string): Promise<RotationRow> {
  const { rows } = await db.query<RotationRow>(
    `SELECT * FROM service_key_rotations WHERE workflow_id = $1 FOR UPDATE`,
    [workflowId],
  );
  if (!rows[0]) throw new AppError('NOT_FOUND', `No rotation ${workflowId} is recorded.`);
  return rows[0];
}

/**
 * Before step 1: the pair's current key id (registry) and current secret version (store), which
 * must agree. A pending key left by an earlier rotation that never finished (its workflow
 * terminated) is revoked, unless a consumer was already handed it (then an operator decides).
 */
export async function prepareRotation(
  pool: pg.Pool,
  workflowId: string,
): Promise<{ oldKeyId: string; oldVersion: number }> {
  return withTransaction(pool, async (db) => {
    const row = await lockRow(db, workflowId);
    if (row.old_key_id && row.old_version !== null) return { oldKeyId: row.old_key_id, oldVersion: row.old_version };
    const { rows: keys } = await db.query<{ key_id: string; state: string }>(
      `SELECT key_id, state FROM service_keys WHERE caller = $1 AND target = $2 AND state IN ('current', 'pending')`,
      [row.caller, row.target],
    );
    const { rows: secret } = await db.query<{ version: number; key_id: string }>(
      `SELECT version, key_id FROM service_key_secrets WHERE caller = $1 AND target = $2 AND is_current`,
      [row.caller, row.target],
    );
    const current = keys.find((k) => k.state === 'current');
    if (!current)
      throw new AppError('NOT_FOUND', `${row.caller} → ${row.target} has no current service key to rotate.`);
    if (!secret[0] || secret[0].key_id !== current.key_id) {
      throw new AppError(
        'CONFLICT',
        `The secret store's current ${row.caller} → ${row.target} key (${secret[0]?.key_id ?? 'none'}) is not the target's current key (${current.key_id}); resolve by hand before rotating.`,
      );
    }
    for (const stale of keys.filter((k) => k.state === 'pending')) await revokeKey(db, stale.key_id);
    await db.query(`UPDATE service_key_rotations SET old_key_id = $2, old_version = $3 WHERE workflow_id = $1`, [
      workflowId,
      current.key_id,
      secret[0].version,
    ]);
    return { oldKeyId: current.key_id, oldVersion: secret[0].version };
  });
}

/**
 * Steps 1 and 2 in one transaction: a new key (32 random bytes, hex) registered `pending` at the
 * target (its hash) and stored as a new, not yet current, secret version (sealed). Returns ids only.
 */
export async function generateRotationKey(
  pool: pg.Pool,
  store: TransactionalSecretStoreWriter,
  workflowId: string,
): Promise<{ newKeyId: string; newVersion: number }> {
  return withTransaction(pool, async (db) => {
    const row = await lockRow(db, workflowId);
    if (row.new_key_id && row.new_version !== null) return { newKeyId: row.new_key_id, newVersion: row.new_version };
    if (row.finished_at) throw new AppError('CONFLICT', `Rotation ${workflowId} is finished.`);
    const pair = { caller: row.caller, target: row.target };
    const { key, record } = await createKey(db, pair, 'pending');
    const version = await store.put(pair.caller, pair.target, { key, keyId: record.keyId }, false, db);
    await db.query(`UPDATE service_key_rotations SET new_key_id = $2, new_version = $3 WHERE workflow_id = $1`, [
      workflowId,
      record.keyId,
      version,
    ]);
    return { newKeyId: record.keyId, newVersion: version };
  });
}

/** Releases the pair's lock with the outcome. Idempotent. */
export async function finishRotation(
  db: Queryable,
  workflowId: string,
  outcome: 'completed' | 'rolled-back' | 'abandoned',
  details: { message?: string; alert?: string } = {},
): Promise<void> {
  await db.query(
    `UPDATE service_key_rotations SET finished_at = now(), outcome = $2, message = $3, alert = COALESCE($4, alert)
      WHERE workflow_id = $1 AND finished_at IS NULL`,
    [workflowId, outcome, details.message ?? null, details.alert ?? null],
  );
}

/** Records the alert raised for a rotation (the CloudEvent id, or why none went out). */
export async function recordRotationAlert(db: Queryable, workflowId: string, alert: string): Promise<void> {
  await db.query(`UPDATE service_key_rotations SET alert = $2 WHERE workflow_id = $1`, [workflowId, alert]);
}

export interface RotationRecord {
  workflowId: string;
  n: number;
  reason: RotationReason;
  oldKeyId: string | null;
  newKeyId: string | null;
  startedAt: Date;
  finishedAt: Date | null;
  outcome: 'completed' | 'rolled-back' | 'abandoned' | null;
  message: string | null;
  alert: string | null;
}

export async function rotationRecord(db: Queryable, workflowId: string): Promise<RotationRecord | undefined> {
  const { rows } = await db.query(
    `SELECT workflow_id AS "workflowId", n, reason, old_key_id AS "oldKeyId", new_key_id AS "newKeyId", started_at AS "startedAt",
            finished_at AS "finishedAt", outcome, message, alert
       FROM service_key_rotations WHERE workflow_id = $1`,
    [workflowId],
  );
  return rows[0] as RotationRecord | undefined;
}
