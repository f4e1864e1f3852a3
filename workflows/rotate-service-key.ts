/**
 * Service-key rotation (issue 10, §5.4), workflow id `rotate:<caller>:<target>:<n>`, modelled on
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
 */
import { ActivityFailure, defineQuery, log, patched, proxyActivities, setHandler, sleep, upsertSearchAttributes, workflowInfo, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { searchAttributes, type RotationInput, type RotationResult, type RotationSettings } from './definitions.js';

export interface RotationStatus {
  step: string;
  oldKeyId?: string;
  newKeyId?: string;
  /** How the consumer proves the switch (inventory.ts). */
  proof?: 'calls' | 'holders' | 'per-run' | 'rules';
  /** `rules`: the last rewrite of the tenants' rules (how many, which could not be updated). */
  rules?: { keyId: string; tenants: number; updated: number; failed: string[] };
  /**
   * The last usage check: whether the consumer has used the new key (and whether the proof needs
   * that), and how long the old one has been silent (of how long it must be).
   */
  lastCheck?: { checkedAt: string; newKeyUsed: boolean; newKeyNeeded?: boolean; oldSilentMs: number; quietMs?: number };
  /** A suspected exposure: the old key dies as soon as the switch is proven, without a quiet period. */
  exposure?: boolean;
  outcome?: RotationResult['outcome'] | 'abandoned';
}

export const rotationStatusQuery = defineQuery<RotationStatus>('rotationStatus');

function rotationActivities(settings: RotationSettings) {
  const intervals = (initial: string, maximum: string) =>
    settings.retryIntervals
      ? { initialInterval: settings.retryIntervals.initialMs, maximumInterval: settings.retryIntervals.maximumMs }
      : { initialInterval: initial, maximumInterval: maximum };
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
  return { mustFinish: proxyActivities<Activities>(mustFinish), nonFatal: proxyActivities<Activities>(nonFatal), tenantRules: proxyActivities<Activities>(tenantRules) };
}

const failureMessage = (err: unknown) => {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
};

export async function rotateServiceKey(input: RotationInput): Promise<RotationResult> {
  const { caller, target, settings } = input;
  const pair = `${caller} → ${target}`;
  const { mustFinish, nonFatal, tenantRules } = rotationActivities(settings);
  const status: RotationStatus = { step: 'queued' };
  setHandler(rotationStatusQuery, () => status);
  const setStep = (step: string) => {
    status.step = step;
    upsertSearchAttributes([{ key: searchAttributes.currentStep, value: step }]);
  };

  // ---- steps 1 and 2 ----
  let oldKeyId: string, oldVersion: number, newKeyId: string, newVersion: number;
  try {
    setStep('prepare');
    ({ oldKeyId, oldVersion } = await mustFinish.prepareRotation.executeWithOptions({ summary: `Read the current ${pair} key id and secret version` }, []));
    status.oldKeyId = oldKeyId;
    setStep('generate-key');
    ({ newKeyId, newVersion } = await mustFinish.generateRotationKey.executeWithOptions(
      { summary: `New key for ${pair}: registered pending at ${target}, stored as a new secret version` },
      [],
    ));
    status.newKeyId = newKeyId;
  } catch (err) {
    const message = failureMessage(err);
    status.outcome = 'abandoned';
    setStep('abandoned');
    await mustFinish.finishRotation.executeWithOptions({ summary: `Release the ${pair} rotation lock (abandoned)` }, [{ outcome: 'abandoned', message }]);
    throw err;
  }

  if (settings.acceptWaitMs > 0) {
    setStep('wait-target-reload');
    await sleep(settings.acceptWaitMs, { summary: `Let every ${target} replica load ${newKeyId} before ${caller} gets it` });
  }

  // ---- step 3 ----
  setStep('make-current');
  const handedOver = await mustFinish.makeRotationSecretCurrent.executeWithOptions(
    { summary: `Secret store: version ${newVersion} (${newKeyId}) current for ${caller}` },
    [{ caller, target, version: newVersion }],
  );
  const switchedAt = Date.parse(handedOver.at);
  let deadline = Date.now() + settings.deadlineMs;

  // ---- step 4 ----
  setStep('verify-switch');
  // the switch proofs came later: a rotation started before them keeps the rule it started with
  // (an input without `proof` is one of those; `calls` is that rule)
  const proof = input.proof && input.proof !== 'calls' && patched('service-key-switch-proofs') ? input.proof : 'calls';
  status.proof = proof;
  const holderWindowMs = settings.holderWindowMs ?? 0;
  const quietMs = proof === 'holders' ? Math.max(settings.quietPeriodMs, holderWindowMs) : settings.quietPeriodMs;
  // `rules`: the rotation moves the consumers (the tenants' rules) itself
  const rewritesRules = proof === 'rules' && patched('service-key-rules-proof');
  let rulesFailure: string | undefined;
  /** Tenants a forward rewrite moved, or may have moved in part before it failed (a roll-back must move them back). */
  let moved: string[] = [];
  const rewriteRules = async (keyId: string, why: string) => {
    const r = await tenantRules.rewriteTenantEventRules.executeWithOptions({ summary: `${why}: every routed tenant's event rules to ${keyId}'s tokens` }, [
      { caller, target, keyId },
    ]);
    status.rules = { keyId, tenants: r.tenants, updated: r.updated.length, failed: r.failed.map((f) => f.tenant) };
    return r;
  };
  const failedTenants = (r: { failed: { tenant: string; error: string }[] }) => r.failed.map((f) => `${f.tenant}: ${f.error}`).join('; ');
  const forward = async (why: string) => {
    const r = await rewriteRules(newKeyId, why);
    moved = [...new Set([...moved, ...r.updated, ...r.failed.map((f) => f.tenant)])];
    return r.failed.length ? `${r.failed.length} of ${r.tenants} tenants could not be updated (${failedTenants(r)})` : undefined;
  };
  if (rewritesRules) {
    setStep('rewrite-rules');
    rulesFailure = await forward('Roll the consumers');
    // the deadline counts from the consumers' move (many tenants take a while)
    deadline = Date.now() + settings.deadlineMs;
    if (!rulesFailure) setStep('verify-switch');
  }
  // after an exposure: no quiet period (above); rotations started before this rule keep the annual one
  const exposure = input.reason === 'exposure' && settings.exposureNoticeMs !== undefined && patched('service-key-exposure-switch');
  if (exposure) status.exposure = true;
  const pollMs = exposure ? (settings.exposurePollMs ?? settings.pollIntervalMs) : settings.pollIntervalMs;
  let verified = false;
  while (!rulesFailure) {
    const usage = await mustFinish.rotationKeyUsage.executeWithOptions(
      { summary: `${target}'s usage records of ${oldKeyId} (old) and ${newKeyId} (new)` },
      [{ keyIds: [oldKeyId, newKeyId] }],
    );
    const checkedAt = Date.parse(usage.checkedAt);
    const newLast = usage.keys[newKeyId]?.lastUsedAt ?? null;
    const oldLast = usage.keys[oldKeyId]?.lastUsedAt ?? null;
    const quietFrom = Math.max(switchedAt, oldLast ? Date.parse(oldLast) : 0);
    if (exposure) {
      const newKeyNeeded = proof === 'calls' || (proof === 'holders' && oldLast !== null && Date.parse(oldLast) >= switchedAt - holderWindowMs);
      const noticeMs = settings.exposureNoticeMs!;
      status.lastCheck = { checkedAt: usage.checkedAt, newKeyUsed: newLast !== null, newKeyNeeded, oldSilentMs: Math.max(0, checkedAt - quietFrom), quietMs: noticeMs };
      if ((newLast !== null || !newKeyNeeded) && checkedAt - switchedAt >= noticeMs) {
        verified = true;
        break;
      }
    } else if (proof === 'calls') {
      status.lastCheck = { checkedAt: usage.checkedAt, newKeyUsed: newLast !== null, oldSilentMs: Math.max(0, checkedAt - quietFrom) };
      if (newLast !== null && checkedAt - quietFrom >= settings.quietPeriodMs) {
        verified = true;
        break;
      }
    } else {
      // per-run: nothing outlives a run; holders: a process that held the old key at the switch
      // (or took it after) must show up on the new one
      const newKeyNeeded = proof === 'holders' && oldLast !== null && Date.parse(oldLast) >= switchedAt - holderWindowMs;
      status.lastCheck = { checkedAt: usage.checkedAt, newKeyUsed: newLast !== null, newKeyNeeded, oldSilentMs: Math.max(0, checkedAt - quietFrom), quietMs };
      if ((newLast !== null || !newKeyNeeded) && checkedAt - quietFrom >= quietMs) {
        verified = true;
        break;
      }
    }
    if (Date.now() >= deadline) break;
    const c = status.lastCheck!;
    const waitingForNewKey = !c.newKeyUsed && c.newKeyNeeded !== false;
    // an exposure waits for the notice window (and the new key's use), never for the old key's silence
    const noticeLeftMs = exposure ? Math.max(0, settings.exposureNoticeMs! - (checkedAt - switchedAt)) : 0;
    await sleep(Math.min(pollMs, Math.max(deadline - Date.now(), 1)), {
      summary: exposure
        ? noticeLeftMs > 0
          ? `exposure: notice window for ${caller} to take ${newKeyId}, ${Math.ceil(noticeLeftMs / 1000)} s left, then ${oldKeyId} is revoked`
          : `exposure: waiting for ${caller} to use ${newKeyId} before ${oldKeyId} is revoked`
        : waitingForNewKey
          ? `waiting for ${caller} to use ${newKeyId}`
          : `${oldKeyId} silent for ${Math.round(c.oldSilentMs / 1000)} s`,
    });
  }
  if (verified && rewritesRules) {
    // no tenant left on the old token: a reconcile may have written it back since the first pass
    setStep('check-rules');
    rulesFailure = await forward('Last pass before the old key dies');
    if (rulesFailure) verified = false;
  }

  if (!verified) {
    // ---- roll back ----
    const last = status.lastCheck;
    let message =
      rulesFailure !== undefined
        ? `${caller} → ${target}: ${rulesFailure}`
        : last!.newKeyUsed || last!.newKeyNeeded === false
          ? `${caller} still used ${oldKeyId} within the quiet period at the deadline (silent ${Math.round(last!.oldSilentMs / 1000)} s of ${Math.round((last!.quietMs ?? settings.quietPeriodMs) / 1000)} s)`
          : `${caller} never used ${newKeyId} within ${Math.round(settings.deadlineMs / 1000)} s`;
    setStep('roll-back');
    await mustFinish.makeRotationSecretCurrent.executeWithOptions(
      { summary: `Roll back: secret store version ${oldVersion} (${oldKeyId}) current for ${caller} again` },
      [{ caller, target, version: oldVersion }],
    );
    if (rewritesRules) {
      // the tenants moved to the new key go back before it is revoked
      setStep('rewrite-rules-back');
      const back = await rewriteRules(oldKeyId, 'Roll back');
      // a tenant moved to the new key and not moved back gets 401 once it is revoked, until the next
      // reconcile writes its rules (the catch-up sweep publishes its invoices meanwhile)
      const stranded = back.failed.filter((f) => moved.includes(f.tenant));
      if (stranded.length) message += `; not moved back to ${oldKeyId} (any rule of theirs on ${newKeyId}'s token gets 401 until their next reconcile): ${failedTenants({ failed: stranded })}`;
    }
    if (settings.rollbackWaitMs > 0) await sleep(settings.rollbackWaitMs, { summary: `Let ${caller} reload ${oldKeyId} before ${newKeyId} is revoked` });
    await mustFinish.revokeRotationKey.executeWithOptions({ summary: `Roll back: revoke the pending ${newKeyId} at ${target}` }, [{ keyId: newKeyId }]);
    setStep('alert');
    try {
      await nonFatal.raiseRotationAlert.executeWithOptions({ summary: `Alert: service-key.rotation-failed for ${pair}` }, [
        { caller, target, oldKeyId, newKeyId, message },
      ]);
    } catch (err) {
      await mustFinish.recordRotationAlert.executeWithOptions({ summary: `Alert recorded without an event` }, [
        { alert: `no event (${failureMessage(err)}): ${message}` },
      ]);
    }
    await mustFinish.finishRotation.executeWithOptions({ summary: `Release the ${pair} rotation lock (rolled back)` }, [{ outcome: 'rolled-back', message }]);
    status.outcome = 'rolled-back';
    setStep('rolled-back');
    log.warn('service-key rotation rolled back', { workflowId: workflowInfo().workflowId, message });
    return { outcome: 'rolled-back', oldKeyId, newKeyId, message };
  }

  // ---- step 5 ----
  setStep('promote');
  await mustFinish.promoteRotationKey.executeWithOptions({ summary: `${newKeyId} current at ${target} (${oldKeyId} previous)` }, [{ keyId: newKeyId }]);
  setStep('revoke-old');
  await mustFinish.revokeRotationKey.executeWithOptions({ summary: `Revoke ${oldKeyId} at ${target}: 401 from now on` }, [{ keyId: oldKeyId }]);
  await mustFinish.finishRotation.executeWithOptions({ summary: `Release the ${pair} rotation lock (completed)` }, [{ outcome: 'completed' }]);
  status.outcome = 'completed';
  setStep('done');
  return { outcome: 'completed', oldKeyId, newKeyId };
}

/**
 * The action of a pair's rotation schedule (`rotate-annual:<caller>:<target>`, domain/service-keys/
 * schedules.ts): starts the pair's next numbered rotation, or records why it skipped this time.
 */
export async function annualServiceKeyRotation(pair: { caller: string; target: string }): Promise<{ workflowId?: string; skipped?: string }> {
  const { beginScheduledRotation } = proxyActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { initialInterval: '1 second', maximumInterval: '1 minute', backoffCoefficient: 2 },
  });
  const result = await beginScheduledRotation.executeWithOptions({ summary: `Start the next rotation of ${pair.caller} → ${pair.target}` }, [pair]);
  if (result.skipped) log.info('scheduled rotation skipped', { ...pair, reason: result.skipped });
  return result;
}
