/**
 * The service-key rotation's activities (workflows/rotate-service-key.ts): thin calls into
 * domain/service-keys. Each takes and returns key ids and secret versions only; the one that makes
 * a key (generateKey) stores it in the secret store in the same transaction, so no key ever crosses
 * Temporal. A business refusal (AppError CONFLICT / NOT_FOUND) becomes a non-retryable failure.
 */
import { Context, log } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type pg from 'pg';
import { cloudEvent, publishEvent } from '../domain/events/events.js';
import { keyUsage, promoteKey, revokeKey } from '../domain/service-keys/key-registry.js';
import * as rotations from '../domain/service-keys/rotation.js';
import type { SecretStore, TransactionalSecretStoreWriter } from '../domain/service-keys/secret-store.js';
import { AppError } from '../lib/errors.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';
import {
  rewriteEventRules,
  type RuleRewriteDeps,
  type RuleRewriteResult,
} from '../domain/erp-events/ingestion-key-rotation.js';
import { SERVICE_KEY_ROTATION_FAILED, type RotationSettings } from '../domain/service-keys/workflow-contract.js';

export interface RotationActivityDeps {
  pool: pg.Pool;
  /** The secret store the rotation writes (steps 2, 3 and the roll-back). */
  store: TransactionalSecretStoreWriter;
  /** Where the worker reads its own key for the events service (the alert's CloudEvent). */
  secrets: SecretStore;
  eventsUrl: string;
  /** For the scheduled rotations: starts `rotate:<caller>:<target>:<n>` with the worker's settings. */
  starter?: { temporal: Client; taskQueue: string; settings: RotationSettings };
  /** The `rules` switch proof (erp → event-ingestion): how the tenant ERPs' rules are reached. */
  eventRules?: Omit<RuleRewriteDeps, 'store'>;
}

export const RotationErrorType = { Refused: 'RotationRefused' } as const;

async function businessFailures<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError && (err.code === 'CONFLICT' || err.code === 'NOT_FOUND')) {
      throw ApplicationFailure.create({ type: RotationErrorType.Refused, message: err.message, nonRetryable: true });
    }
    throw err;
  }
}

const workflowId = () => Context.current().info.workflowExecution!.workflowId;

type RotationPair = { caller: string; target: string };
type KeyUsageByKey = Record<string, { state: string; lastUsedAt: string | null }>;
type RotationAlert = { caller: string; target: string; oldKeyId: string; newKeyId: string; message: string };
type RotationOutcome = 'completed' | 'rolled-back' | 'abandoned';

/**
 * The schedule's action: starts the pair's next numbered rotation, as the ops API does. A pair
 * that is rotating already, or has no current key, is skipped (answered, not failed).
 */
async function beginScheduledRotation(
  deps: RotationActivityDeps,
  pair: RotationPair,
): Promise<{ workflowId?: string; skipped?: string }> {
  if (!deps.starter) throw new Error('this worker cannot start rotations (no Temporal client configured)');
  try {
    const started = await rotations.startRotation({ pool: deps.pool, ...deps.starter }, pair, 'annual');
    return { workflowId: started.workflowId };
  } catch (err) {
    if (err instanceof AppError && (err.code === 'CONFLICT' || err.code === 'NOT_FOUND'))
      return { skipped: err.message };
    throw err;
  }
}

/** The pair's current key id and secret version (the ones the rotation replaces). */
async function prepareRotation(deps: RotationActivityDeps): Promise<{ oldKeyId: string; oldVersion: number }> {
  return businessFailures(() => rotations.prepareRotation(deps.pool, workflowId()));
}

/** Steps 1 + 2: a new key registered pending at the target and stored as a new secret version (ids only back). */
async function generateRotationKey(deps: RotationActivityDeps): Promise<{ newKeyId: string; newVersion: number }> {
  return businessFailures(() => rotations.generateRotationKey(deps.pool, deps.store, workflowId()));
}

/** Step 3 (and the roll-back): a secret version becomes current; consumers pick it up within their cache TTL. */
async function makeRotationSecretCurrent(
  deps: RotationActivityDeps,
  input: { caller: string; target: string; version: number },
): Promise<{ at: string }> {
  await businessFailures(() => deps.store.makeCurrent(input.caller, input.target, input.version));
  return { at: new Date().toISOString() };
}

/** Step 4: the target's own records of the two keys' last use. */
async function rotationKeyUsage(
  deps: RotationActivityDeps,
  input: { keyIds: string[] },
): Promise<{ checkedAt: string; keys: KeyUsageByKey }> {
  const usage = await keyUsage(deps.pool, input.keyIds, new Date(0));
  const keys: KeyUsageByKey = {};
  for (const [id, u] of usage)
    keys[id] = { state: u.state, lastUsedAt: u.lastUsedAt ? u.lastUsedAt.toISOString() : null };
  return { checkedAt: new Date().toISOString(), keys };
}

/**
 * The `rules` proof's "roll the consumer" (after step 3, before step 5, and on a roll-back): every
 * routed tenant's event rules rewritten to the tokens of the pair's current key, which must be
 * `keyId`; the tenants that could not be updated are in `failed` (the workflow rolls back).
 */
async function rewriteTenantEventRules(
  deps: RotationActivityDeps,
  input: { caller: string; target: string; keyId: string },
): Promise<RuleRewriteResult> {
  if (!deps.eventRules) throw new Error('this worker cannot reach the tenant ERPs (no event-rules configuration)');
  // the secret store's record, read fresh (the version the workflow has just made current)
  const store = new PgSecretStore(deps.pool, deps.eventRules.erp.secretsKey, 0);
  const result = await rewriteEventRules({ ...deps.eventRules, store }, input, {
    heartbeat: () => Context.current().heartbeat(),
  });
  log.info('tenant event rules rewritten', {
    ...input,
    tenants: result.tenants,
    updated: result.updated.length,
    failed: result.failed.map((f) => f.tenant),
  });
  return result;
}

/** Step 5a: the new key becomes current at the target, the old one previous (still accepted). */
async function promoteRotationKey(deps: RotationActivityDeps, input: { keyId: string }): Promise<void> {
  await businessFailures(() => promoteKey(deps.pool, input.keyId));
}

/** Step 5b (and the roll-back of the pending key): the key gets 401 from now on. */
async function revokeRotationKey(deps: RotationActivityDeps, input: { keyId: string }): Promise<void> {
  await revokeKey(deps.pool, input.keyId);
}

/**
 * The alert of a roll-back: an error log line and a `service-key.rotation-failed` CloudEvent
 * through the events service (deterministic id: a retry is stored once); what went out is
 * recorded on the rotation's row. Returns the event id.
 */
async function raiseRotationAlert(deps: RotationActivityDeps, input: RotationAlert): Promise<{ eventId: string }> {
  const id = `${SERVICE_KEY_ROTATION_FAILED}:${workflowId()}`;
  log.error('service-key rotation rolled back', {
    ...input,
    workflowId: workflowId(),
    alert: SERVICE_KEY_ROTATION_FAILED,
  });
  await publishEvent(
    { eventsUrl: deps.eventsUrl, apiKey: (await deps.secrets.current('worker', 'events')).key },
    cloudEvent({
      id,
      source: '/plana/service-key-rotation',
      type: SERVICE_KEY_ROTATION_FAILED,
      subject: `${input.caller}:${input.target}`,
      data: { ...input, workflowId: workflowId() },
    }),
  );
  await rotations.recordRotationAlert(deps.pool, workflowId(), `event ${id}`);
  return { eventId: id };
}

/** When the alert's event could not go out: the condition stays recorded on the rotation's row. */
async function recordRotationAlert(deps: RotationActivityDeps, input: { alert: string }): Promise<void> {
  log.error('service-key rotation alert recorded without an event', { workflowId: workflowId(), alert: input.alert });
  await rotations.recordRotationAlert(deps.pool, workflowId(), input.alert);
}

/** Releases the pair's lock with the outcome. */
async function finishRotation(
  deps: RotationActivityDeps,
  input: { outcome: RotationOutcome; message?: string },
): Promise<void> {
  await rotations.finishRotation(deps.pool, workflowId(), input.outcome, { message: input.message });
}

/** The rotation's activities, by the names the workflow calls them (workflows/rotate-service-key.ts). */
export const createRotationActivities = (deps: RotationActivityDeps) => ({
  beginScheduledRotation: (pair: RotationPair) => beginScheduledRotation(deps, pair),
  prepareRotation: () => prepareRotation(deps),
  generateRotationKey: () => generateRotationKey(deps),
  makeRotationSecretCurrent: (input: { caller: string; target: string; version: number }) =>
    makeRotationSecretCurrent(deps, input),
  rotationKeyUsage: (input: { keyIds: string[] }) => rotationKeyUsage(deps, input),
  rewriteTenantEventRules: (input: { caller: string; target: string; keyId: string }) =>
    rewriteTenantEventRules(deps, input),
  promoteRotationKey: (input: { keyId: string }) => promoteRotationKey(deps, input),
  revokeRotationKey: (input: { keyId: string }) => revokeRotationKey(deps, input),
  raiseRotationAlert: (input: RotationAlert) => raiseRotationAlert(deps, input),
  recordRotationAlert: (input: { alert: string }) => recordRotationAlert(deps, input),
  finishRotation: (input: { outcome: RotationOutcome; message?: string }) => finishRotation(deps, input),
});

export type RotationActivities = ReturnType<typeof createRotationActivities>;
