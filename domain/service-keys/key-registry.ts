/**
 * The target side's key registry (table service_keys): hashes, key ids, states and usage. Every
 * function a rotation needs is here, each a single idempotent statement or transaction:
 *
 *   registerKey(…, 'pending')  step 1: the target accepts the new key next to the current one
 *   promoteKey(newId)          step 3/4: new → current, the old current → previous (still accepted)
 *   revokeKey(oldId)           step 5: the old key gets 401 (and rollback: revoke the pending one)
 *   keyUsage(keyIds, since)    step 4: proof from the target's own records that the consumer switched
 *
 * Changing a state fires NOTIFY service_keys (migration 500), so running targets reload at once.
 */
import type pg from 'pg';
import { withTransaction, type Queryable } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { generateServiceKey, hashServiceKey, newKeyId } from './service-key-auth.js';

export const KEY_STATES = ['pending', 'current', 'previous', 'revoked'] as const;
export type KeyState = (typeof KEY_STATES)[number];

export interface ServiceKeyRecord {
  keyId: string;
  caller: string;
  target: string;
  state: KeyState;
  createdAt: Date;
  promotedAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  useCount: number;
}

/** What a target keeps in memory: the hash, never the key. */
export interface AcceptedKey {
  keyId: string;
  caller: string;
  state: Exclude<KeyState, 'revoked'>;
  hash: Buffer;
}

interface Row {
  key_id: string;
  caller: string;
  target: string;
  state: KeyState;
  created_at: Date;
  promoted_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  use_count: string;
}
const COLUMNS = 'key_id, caller, target, state, created_at, promoted_at, revoked_at, last_used_at, use_count';
const toRecord = (r: Row): ServiceKeyRecord => ({
  keyId: r.key_id,
  caller: r.caller,
  target: r.target,
  state: r.state,
  createdAt: r.created_at,
  promotedAt: r.promoted_at,
  revokedAt: r.revoked_at,
  lastUsedAt: r.last_used_at,
  useCount: Number(r.use_count),
});

/**
 * Registers `key` (only its hash) for caller → target in `state` ('pending' or 'current').
 * A second current or pending key for one pair is refused (409): promote or revoke first.
 */
export async function registerKey(
  db: Queryable,
  pair: { caller: string; target: string },
  key: string,
  state: 'pending' | 'current',
): Promise<ServiceKeyRecord> {
  try {
    const { rows } = await db.query<Row>(
      `INSERT INTO service_keys (key_id, caller, target, key_hash, state, promoted_at)
       VALUES ($1, $2, $3, $4, $5, CASE WHEN $5 = 'current' THEN now() END)
       RETURNING ${COLUMNS}`,
      [newKeyId(), pair.caller, pair.target, hashServiceKey(key), state],
    );
    return toRecord(rows[0]!);
  } catch (err) {
    if ((err as { code?: string }).code === '23505') {
      throw new AppError(
        'CONFLICT',
        `${pair.caller} → ${pair.target} already has a ${state} key (or the key id collided; retry).`,
      );
    }
    throw err;
  }
}

/** A new key for a pair, registered in `state`; the plaintext is returned once, for the secret store. */
export async function createKey(db: Queryable, pair: { caller: string; target: string }, state: 'pending' | 'current') {
  const key = generateServiceKey();
  return { key, record: await registerKey(db, pair, key, state) };
}

/**
 * Makes a pending key current; the pair's current key becomes previous (still accepted until it is
 * revoked). Idempotent: promoting the current key again changes nothing.
 */
export async function promoteKey(pool: pg.Pool, keyId: string): Promise<ServiceKeyRecord> {
  return withTransaction(pool, async (c) => {
    const { rows: found } = await c.query<{ caller: string; target: string }>(
      `SELECT caller, target FROM service_keys WHERE key_id = $1 AND state IN ('pending', 'current') FOR UPDATE`,
      [keyId],
    );
    const pair = found[0];
    if (!pair) throw new AppError('CONFLICT', `Key ${keyId} is not pending or current, so it cannot be promoted.`);
    await c.query(
      `UPDATE service_keys SET state = 'previous' WHERE caller = $1 AND target = $2 AND state = 'current' AND key_id <> $3`,
      [pair.caller, pair.target, keyId],
    );
    const { rows } = await c.query<Row>(
      `UPDATE service_keys SET state = 'current', promoted_at = COALESCE(promoted_at, now()) WHERE key_id = $1 RETURNING ${COLUMNS}`,
      [keyId],
    );
    return toRecord(rows[0]!);
  });
}

/** Revokes a key: the next request with it gets 401 on every target replica. Idempotent. */
export async function revokeKey(db: Queryable, keyId: string): Promise<ServiceKeyRecord | undefined> {
  const { rows } = await db.query<Row>(
    `UPDATE service_keys SET state = 'revoked', revoked_at = COALESCE(revoked_at, now())
      WHERE key_id = $1 RETURNING ${COLUMNS}`,
    [keyId],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** The keys a target accepts (pending, current, previous): hashes only. */
export async function acceptedKeys(db: Queryable, target: string): Promise<AcceptedKey[]> {
  const { rows } = await db.query<{ key_id: string; caller: string; state: AcceptedKey['state']; key_hash: Buffer }>(
    `SELECT key_id, caller, state, key_hash FROM service_keys WHERE target = $1 AND state <> 'revoked'`,
    [target],
  );
  return rows.map((r) => ({ keyId: r.key_id, caller: r.caller, state: r.state, hash: r.key_hash }));
}

/** The target's revoked keys (hashes only): a later use of one raises an alert (misuse.ts). */
export async function revokedKeys(
  db: Queryable,
  target: string,
): Promise<{ keyId: string; caller: string; hash: Buffer }[]> {
  const { rows } = await db.query<{ key_id: string; caller: string; key_hash: Buffer }>(
    `SELECT key_id, caller, key_hash FROM service_keys WHERE target = $1 AND state = 'revoked'`,
    [target],
  );
  return rows.map((r) => ({ keyId: r.key_id, caller: r.caller, hash: r.key_hash }));
}

/** Every registered key (no hashes), optionally of one pair, newest first within a pair. */
export async function listKeys(db: Queryable, pair?: { caller: string; target: string }): Promise<ServiceKeyRecord[]> {
  const { rows } = await db.query<Row>(
    `SELECT ${COLUMNS} FROM service_keys
      WHERE ($1::text IS NULL OR (caller = $1 AND target = $2))
      ORDER BY target, caller, created_at DESC, key_id`,
    [pair?.caller ?? null, pair?.target ?? null],
  );
  return rows.map(toRecord);
}

/** Adds a target's usage since its last flush: one UPDATE for all keys. */
export async function recordKeyUsage(db: Queryable, usage: ReadonlyMap<string, { lastUsedAt: Date; count: number }>) {
  if (usage.size === 0) return;
  const ids = [...usage.keys()];
  await db.query(
    `UPDATE service_keys s
        SET last_used_at = GREATEST(s.last_used_at, u.at), use_count = s.use_count + u.n
       FROM unnest($1::text[], $2::timestamptz[], $3::bigint[]) AS u(id, at, n)
      WHERE s.key_id = u.id`,
    [ids, ids.map((id) => usage.get(id)!.lastUsedAt), ids.map((id) => usage.get(id)!.count)],
  );
}

/**
 * Step 4 of a rotation: for each key id, whether it was used at or after `since` and when last.
 * (Targets flush usage every few seconds: wait that long after `since` before concluding silence.)
 */
export async function keyUsage(db: Queryable, keyIds: readonly string[], since: Date) {
  const { rows } = await db.query<{ key_id: string; last_used_at: Date | null; state: KeyState }>(
    `SELECT key_id, last_used_at, state FROM service_keys WHERE key_id = ANY($1::text[])`,
    [keyIds],
  );
  return new Map(
    rows.map((r) => [
      r.key_id,
      { state: r.state, lastUsedAt: r.last_used_at, usedSince: r.last_used_at !== null && r.last_used_at >= since },
    ]),
  );
}
