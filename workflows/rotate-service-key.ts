/**
 * Service-key rotation (§5.4), workflow id `rotate:<caller>:<target>:<n>`, modelled on
 * AWS Secrets Manager's pending/current/previous staging:
 *
 *   1+2. generate a new key, register it `pending` at the target (hash only) and store it as a new
 *        secret version: one activity, one transaction, so the key never crosses Temporal;
 *        then wait `acceptWaitMs` (targets reload on NOTIFY at once; this covers one that missed it)
 *   3.   make the new version current in the secret store: consumers pick it up within their TTL
 *   4.   poll the target's own usage records (durable timers) until the consumer has proved the
 *        switch by its pair's switch proof (domain/service-keys/inventory.ts; `calls` when absent):
 *        `calls`: the new key id used and the old one silent for `quietPeriodMs`; `holders`: the
 *        old key id silent for the quiet period (at least `holderWindowMs`: every holding process
 *        reports its key more often than that), and the new key id used too if the old one was used
 *        within `holderWindowMs` before the switch (someone held it); `per-run`: the old key id
 *        silent for the quiet period. Not by `deadlineMs` → roll back: the old version current
 *        again, (after `rollbackWaitMs`) the pending key revoked, an alert (log line + `service-key.rotation-failed` CloudEvent; recorded on the rotation's
 *        row either way)
 *   5.   promote the new key (old → previous) and revoke the old one (401 from then on)
 *
 * Reason `exposure` (patched('service-key-exposure-switch'), settings with `exposureNoticeMs`): the
 * old key's use proves nothing then (it may be the attacker's) and must end within a minute, so no
 * quiet period: step 4 holds once `exposureNoticeMs` (a secret-cache tick plus a usage flush: every
 * running holder has announced the new version by then) has passed since the switch and the new key
 * id was used where the proof needs it (`calls`: always; `holders`: when the old key was held in
 * the holder window before the switch; `per-run` and `rules`: never), polled every `exposurePollMs`.
 *
 * Proof `rules` (erp → event-ingestion, patched('service-key-rules-proof')): right after step 3 the
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
 * Each step is a function below, run in order by `rotateServiceKey`; step 4's rules per proof kind
 * are in rotation-switch-proof.ts, the `rules` proof's tenants in rotation-consumer-rules.ts.
 */
import {
  defineQuery,
  log,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { SwitchProof } from '../domain/service-keys/inventory.js';
import type { RotationInput, RotationResult, RotationSettings } from '../domain/service-keys/workflow-contract.js';
import { searchAttributes } from '../domain/workflow-search-attributes.js';
import {
  isExposureRotation,
  judgeUsage,
  switchRule,
  unprovenReason,
  waitSummary,
  type KeyPair,
  type SwitchRule,
  type UsageCheck,
} from './rotation-switch-proof.js';
import { ConsumerRules } from './rotation-consumer-rules.js';
import { failureMessage } from './shared/activity-failures.js';
import { retryIntervals } from './shared/retry-intervals.js';

export interface RotationStatus {
  step: string;
  oldKeyId?: string;
  newKeyId?: string;
  /** How the consumer proves the switch (inventory.ts). */
  proof?: SwitchProof;
  /** `rules`: the last rewrite of the tenants' rules (how many, which could not be updated). */
  rules?: { keyId: string; tenants: number; updated: number; failed: string[] };
  /** The last usage check (rotation-switch-proof.ts). */
  lastCheck?: UsageCheck;
  /** A suspected exposure: the old key dies as soon as the switch is proven, without a quiet period. */
  exposure?: boolean;
  outcome?: RotationResult['outcome'] | 'abandoned';
}

export const rotationStatusQuery = defineQuery<RotationStatus>('rotationStatus');

function rotationActivities(settings: RotationSettings) {
  const intervals = (initial: string, maximum: string) => retryIntervals(settings.retryIntervals, initial, maximum);
  const mustFinish: ActivityOptions = {
    startToCloseTimeout: '30 seconds',
    retry: { ...intervals('1 second', '1 minute'), backoffCoefficient: 2 },
  };
  const nonFatal: ActivityOptions = {
    startToCloseTimeout: '30 seconds',
    retry: { ...intervals('1 second', '10 seconds'), backoffCoefficient: 2, maximumAttempts: 3 },
  };
  // the tenants' rules, a few ERPs at a time: minutes for many tenants, a heartbeat per tenant
  const tenantRules: ActivityOptions = {
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: '3 minutes',
    retry: { ...intervals('1 second', '1 minute'), backoffCoefficient: 2 },
  };
  return {
    mustFinish: proxyActivities<Activities>(mustFinish),
    nonFatal: proxyActivities<Activities>(nonFatal),
    tenantRules: proxyActivities<Activities>(tenantRules),
  };
}

/** One rotation as it runs: its input, its activities and its status (the query's answer). */
export interface Rotation {
  caller: string;
  target: string;
  /** `caller → target`, for the summaries. */
  pair: string;
  input: RotationInput;
  settings: RotationSettings;
  activities: ReturnType<typeof rotationActivities>;
  status: RotationStatus;
  /** The step shown in the status and in the `CurrentStep` search attribute. */
  setStep(step: string): void;
}

/** The pair's old and new key ids and secret versions. */
export interface RotationKeys extends KeyPair {
  oldVersion: number;
  newVersion: number;
}

export async function rotateServiceKey(input: RotationInput): Promise<RotationResult> {
  const rotation = startRotation(input);
  const keys = await stageNewKey(rotation);
  await letTargetAccept(rotation, keys);
  const switched = await switchConsumer(rotation, keys);
  const proven = await proveSwitch(rotation, keys, switched);
  if (!proven.verified) return rollBack(rotation, keys, proven);
  return completeRotation(rotation, keys);
}

function startRotation(input: RotationInput): Rotation {
  const { caller, target, settings } = input;
  const activities = rotationActivities(settings);
  const status: RotationStatus = { step: 'queued' };
  setHandler(rotationStatusQuery, () => status);
  const setStep = (step: string) => {
    status.step = step;
    upsertSearchAttributes([{ key: searchAttributes.currentStep, value: step }]);
  };
  return { caller, target, pair: `${caller} → ${target}`, input, settings, activities, status, setStep };
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

/** How step 4 ended: proven, or why not; the consumers' rules when the rotation moves them. */
interface SwitchOutcome {
  verified: boolean;
  rulesFailure?: string;
  rules?: ConsumerRules;
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

/**
 * Roll back: the old version current again, the tenants' rules moved back (`rules`), (after
 * `rollbackWaitMs`) the pending key revoked, an alert raised, the lock released.
 */
async function rollBack(
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
