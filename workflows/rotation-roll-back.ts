/**
 * A rotation's roll-back (rotate-service-key.ts, when step 4 fails): the old secret version current
 * again, the tenants' rules moved back, the pending key revoked, an alert raised, the lock released.
 */
import { log, sleep, workflowInfo } from '@temporalio/workflow';
import type { RotationResult } from '../domain/service-keys/workflow-contract.js';
import type { ConsumerRules } from './rotation-consumer-rules.js';
import type { Rotation, RotationKeys } from './rotation-run.js';
import { unprovenReason } from './rotation-switch-proof.js';
import { failureMessage } from './shared/activity-failures.js';

/** How step 4 ended: proven, or why not; the consumers' rules when the rotation moves them. */
export interface SwitchOutcome {
  verified: boolean;
  rulesFailure?: string;
  rules?: ConsumerRules;
}

/**
 * Roll back: the old version current again, the tenants' rules moved back (`rules`), (after
 * `rollbackWaitMs`) the pending key revoked, an alert raised, the lock released.
 */
export async function rollBack(
  rotation: Rotation,
  keys: RotationKeys,
  { rulesFailure, rules }: SwitchOutcome,
): Promise<RotationResult> {
  const {
    caller,
    target,
    pair,
    settings,
    activities: { mustFinish },
    status,
    setStep,
  } = rotation;
  const { oldKeyId, oldVersion, newKeyId } = keys;
  let message =
    rulesFailure !== undefined
      ? `${caller} → ${target}: ${rulesFailure}`
      : unprovenReason(caller, keys, status.lastCheck!, settings);
  setStep('roll-back');
  await mustFinish.makeRotationSecretCurrent.executeWithOptions(
    { summary: `Roll back: secret store version ${oldVersion} (${oldKeyId}) current for ${caller} again` },
    [{ caller, target, version: oldVersion }],
  );
  if (rules) {
    // the tenants moved to the new key go back before it is revoked
    setStep('rewrite-rules-back');
    message += await rules.back();
  }
  if (settings.rollbackWaitMs > 0)
    await sleep(settings.rollbackWaitMs, { summary: `Let ${caller} reload ${oldKeyId} before ${newKeyId} is revoked` });
  await mustFinish.revokeRotationKey.executeWithOptions(
    { summary: `Roll back: revoke the pending ${newKeyId} at ${target}` },
    [{ keyId: newKeyId }],
  );
  await raiseAlert(rotation, keys, message);
  await mustFinish.finishRotation.executeWithOptions({ summary: `Release the ${pair} rotation lock (rolled back)` }, [
    { outcome: 'rolled-back', message },
  ]);
  status.outcome = 'rolled-back';
  setStep('rolled-back');
  log.warn('service-key rotation rolled back', { workflowId: workflowInfo().workflowId, message });
  return { outcome: 'rolled-back', oldKeyId, newKeyId, message };
}

/** The roll-back's alert: a `service-key.rotation-failed` event, or (when it cannot go out) a record without it. */
async function raiseAlert(
  { caller, target, pair, activities, setStep }: Rotation,
  { oldKeyId, newKeyId }: RotationKeys,
  message: string,
): Promise<void> {
  setStep('alert');
  try {
    await activities.nonFatal.raiseRotationAlert.executeWithOptions(
      { summary: `Alert: service-key.rotation-failed for ${pair}` },
      [{ caller, target, oldKeyId, newKeyId, message }],
    );
  } catch (err) {
    await activities.mustFinish.recordRotationAlert.executeWithOptions({ summary: `Alert recorded without an event` }, [
      { alert: `no event (${failureMessage(err)}): ${message}` },
    ]);
  }
}
