/**
 * Service-key rotation (§5.4), workflow id `rotate:<caller>:<target>:<n>`, modelled on
 * AWS Secrets Manager's pending/current/previous staging:
 *
 *   1+2. generate a new key, register it `pending` at the target (hash only) and store it as a new
 *        secret version: one activity, one transaction, so the key never crosses Temporal;
 *        then wait `acceptWaitMs` (targets reload on NOTIFY at once; this covers one that missed it)
 *   3.   make the new version current in the secret store: consumers pick it up within their TTL
 *   4.   poll the target's own usage records (durable timers) until the consumer has proved the
 *        switch by its pair's switch proof (domain/service-keys/inventory.ts):
 *        `calls`: the new key id used and the old one silent for `quietPeriodMs`; `holders`: the
 *        old key id silent for the quiet period (at least `holderWindowMs`: every holding process
 *        reports its key more often than that), and the new key id used too if the old one was used
 *        within `holderWindowMs` before the switch (someone held it); `per-run`: the old key id
 *        silent for the quiet period. Not by `deadlineMs` → roll back: the old version current
 *        again, (after `rollbackWaitMs`) the pending key revoked, an alert (log line + `service-key.rotation-failed` CloudEvent; recorded on the rotation's
 *        row either way)
 *   5.   promote the new key (old → previous) and revoke the old one (401 from then on)
 *
 * Reason `exposure` (with `exposureNoticeMs` in the settings): the
 * old key's use proves nothing then (it may be the attacker's) and must end within a minute, so no
 * quiet period: step 4 holds once `exposureNoticeMs` (a secret-cache tick plus a usage flush: every
 * running holder has announced the new version by then) has passed since the switch and the new key
 * id was used where the proof needs it (`calls`: always; `holders`: when the old key was held in
 * the holder window before the switch; `per-run` and `rules`: never), polled every `exposurePollMs`.
 *
 * Proof `rules` (erp → event-ingestion): right after step 3 the
 * rotation rewrites every routed tenant's event rules to the new key's tokens (activity
 * rewriteTenantEventRules); a tenant that could not be updated → roll back. Then the `per-run`
 * rule (the old key id silent for the quiet period), then one more pass over the rules (none may
 * be left on the old token: a reconcile that read the old key before the switch may have written
 * it) before step 5. A roll-back rewrites the rules back to the old key before the new one is
 * revoked.
 *
 * Inputs, results and activity payloads hold key ids and version numbers only. The per-pair lock
 * (a row of service_key_rotations) is taken by whoever starts the workflow and released by its
 * last activity. Activities: `mustFinish` (retried without limit; only a business refusal reaches
 * the workflow) and `nonFatal` (the alert's event: a few attempts, then recorded without it).
 *
 * Each step is a function below, run in order by `rotateServiceKey`; the rotation's status and activity
 * policies are in rotation-run.ts, step 4's rules per proof kind in rotation-switch-proof.ts, the `rules`
 * proof's tenants in rotation-consumer-rules.ts, the roll-back in rotation-roll-back.ts.
 */
import { sleep } from '@temporalio/workflow';
import type { RotationInput, RotationResult } from '../domain/service-keys/workflow-contract.js';
import { isExposureRotation, judgeUsage, switchRule, waitSummary, type SwitchRule } from './rotation-switch-proof.js';
import { ConsumerRules } from './rotation-consumer-rules.js';
import { rollBack, type SwitchOutcome } from './rotation-roll-back.js';
import { startRotation, type Rotation, type RotationKeys } from './rotation-run.js';
import { failureMessage } from './shared/activity-failures.js';

export { rotationStatusQuery, type RotationStatus } from './rotation-run.js';

export async function rotateServiceKey(input: RotationInput): Promise<RotationResult> {
  const rotation = startRotation(input);
  const keys = await stageNewKey(rotation);
  await letTargetAccept(rotation, keys);
  const switched = await switchConsumer(rotation, keys);
  const proven = await proveSwitch(rotation, keys, switched);
  if (!proven.verified) return rollBack(rotation, keys, proven);
  return completeRotation(rotation, keys);
}

/**
 * Steps 1 and 2: the current key read, a new one generated, registered pending at the target and
 * stored as a new secret version. A refusal abandons the rotation (the lock released, the failure thrown).
 */
async function stageNewKey({
  pair,
  target,
  activities: { mustFinish },
  status,
  setStep,
}: Rotation): Promise<RotationKeys> {
  try {
    setStep('prepare');
    const { oldKeyId, oldVersion } = await mustFinish.prepareRotation.executeWithOptions(
      { summary: `Read the current ${pair} key id and secret version` },
      [],
    );
    status.oldKeyId = oldKeyId;
    setStep('generate-key');
    const { newKeyId, newVersion } = await mustFinish.generateRotationKey.executeWithOptions(
      { summary: `New key for ${pair}: registered pending at ${target}, stored as a new secret version` },
      [],
    );
    status.newKeyId = newKeyId;
    return { oldKeyId, oldVersion, newKeyId, newVersion };
  } catch (err) {
    const message = failureMessage(err);
    status.outcome = 'abandoned';
    setStep('abandoned');
    await mustFinish.finishRotation.executeWithOptions({ summary: `Release the ${pair} rotation lock (abandoned)` }, [
      { outcome: 'abandoned', message },
    ]);
    throw err;
  }
}

/** The accept wait: targets reload on NOTIFY at once; this covers a replica that missed it. */
async function letTargetAccept(
  { caller, target, settings, setStep }: Rotation,
  { newKeyId }: RotationKeys,
): Promise<void> {
  if (settings.acceptWaitMs <= 0) return;
  setStep('wait-target-reload');
  await sleep(settings.acceptWaitMs, {
    summary: `Let every ${target} replica load ${newKeyId} before ${caller} gets it`,
  });
}

/** Step 3: the new version current in the secret store (consumers pick it up within their TTL). */
async function switchConsumer(
  { caller, target, settings, activities, setStep }: Rotation,
  { newKeyId, newVersion }: RotationKeys,
): Promise<{ switchedAt: number; deadline: number }> {
  setStep('make-current');
  const handedOver = await activities.mustFinish.makeRotationSecretCurrent.executeWithOptions(
    { summary: `Secret store: version ${newVersion} (${newKeyId}) current for ${caller}` },
    [{ caller, target, version: newVersion }],
  );
  return { switchedAt: Date.parse(handedOver.at), deadline: Date.now() + settings.deadlineMs };
}

/**
 * Step 4: the switch proven by the pair's rule (rotation-switch-proof.ts) before the deadline.
 * `rules`: the tenants' rules rewritten first (the deadline counts from then), and once more before the old key dies.
 */
async function proveSwitch(
  rotation: Rotation,
  keys: RotationKeys,
  switched: { switchedAt: number; deadline: number },
): Promise<SwitchOutcome> {
  const { settings, status, setStep } = rotation;
  let { deadline } = switched;
  setStep('verify-switch');
  const rule = switchRule(rotation.input);
  status.proof = rule.proof;
  const rules = rule.rewritesRules ? new ConsumerRules(rotation, keys) : undefined;
  let rulesFailure: string | undefined;
  if (rules) {
    setStep('rewrite-rules');
    rulesFailure = await rules.forward('Roll the consumers');
    // the deadline counts from the consumers' move (many tenants take a while)
    deadline = Date.now() + settings.deadlineMs;
    if (!rulesFailure) setStep('verify-switch');
  }
  const exposure = isExposureRotation(rotation.input);
  if (exposure) status.exposure = true;
  let verified =
    !rulesFailure &&
    (await pollUntilProven(
      rotation,
      keys,
      rule,
      exposure ? settings.exposureNoticeMs! : undefined,
      switched.switchedAt,
      deadline,
    ));
  if (verified && rules) {
    // no tenant left on the old token: a reconcile may have written it back since the first pass
    setStep('check-rules');
    rulesFailure = await rules.forward('Last pass before the old key dies');
    if (rulesFailure) verified = false;
  }
  return { verified, rulesFailure, rules };
}

/** Reads the target's usage records (durable timers between) until they prove the switch or the deadline passes. */
async function pollUntilProven(
  { caller, target, settings, activities, status }: Rotation,
  keys: RotationKeys,
  rule: SwitchRule,
  noticeMs: number | undefined,
  switchedAt: number,
  deadline: number,
): Promise<boolean> {
  const { oldKeyId, newKeyId } = keys;
  const pollMs =
    noticeMs !== undefined ? (settings.exposurePollMs ?? settings.pollIntervalMs) : settings.pollIntervalMs;
  for (;;) {
    const usage = await activities.mustFinish.rotationKeyUsage.executeWithOptions(
      { summary: `${target}'s usage records of ${oldKeyId} (old) and ${newKeyId} (new)` },
      [{ keyIds: [oldKeyId, newKeyId] }],
    );
    const { check, proven } = judgeUsage(rule, noticeMs, keys, switchedAt, usage);
    status.lastCheck = check;
    if (proven) return true;
    if (Date.now() >= deadline) return false;
    const noticeLeftMs =
      noticeMs !== undefined ? Math.max(0, noticeMs - (Date.parse(usage.checkedAt) - switchedAt)) : undefined;
    await sleep(Math.min(pollMs, Math.max(deadline - Date.now(), 1)), {
      summary: waitSummary(caller, keys, check, noticeLeftMs),
    });
  }
}

/** Step 5: the new key promoted (old → previous), the old one revoked (401 from then on), the lock released. */
async function completeRotation(
  { target, pair, activities: { mustFinish }, status, setStep }: Rotation,
  { oldKeyId, newKeyId }: RotationKeys,
): Promise<RotationResult> {
  setStep('promote');
  await mustFinish.promoteRotationKey.executeWithOptions(
    { summary: `${newKeyId} current at ${target} (${oldKeyId} previous)` },
    [{ keyId: newKeyId }],
  );
  setStep('revoke-old');
  await mustFinish.revokeRotationKey.executeWithOptions(
    { summary: `Revoke ${oldKeyId} at ${target}: 401 from now on` },
    [{ keyId: oldKeyId }],
  );
  await mustFinish.finishRotation.executeWithOptions({ summary: `Release the ${pair} rotation lock (completed)` }, [
    { outcome: 'completed' },
  ]);
  status.outcome = 'completed';
  setStep('done');
  return { outcome: 'completed', oldKeyId, newKeyId };
}
