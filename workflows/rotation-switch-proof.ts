/**
 * How a service-key rotation decides, from the target's usage records, that the consumer has
 * switched to the new key (step 4 of rotate-service-key.ts), one rule per proof kind
 * (domain/service-keys/inventory.ts), and what it says while it waits. Pure: no activity, no timer.
 */
import type { SwitchProof } from '../domain/service-keys/inventory.js';
import type { RotationInput } from '../domain/service-keys/workflow-contract.js';

/** The last usage check, as the rotation's status shows it. */
export interface UsageCheck {
  checkedAt: string;
  /** Whether the consumer has used the new key (and whether the proof needs that). */
  newKeyUsed: boolean;
  newKeyNeeded?: boolean;
  /** How long the old key has been silent (of how long it must be). */
  oldSilentMs: number;
  quietMs?: number;
}

/** The rule a rotation proves its switch by. */
export interface SwitchRule {
  proof: SwitchProof;
  /** The old key's silence the proof asks for (`holders`: at least the holder window). */
  quietMs: number;
  holderWindowMs: number;
  /** `rules`: the rotation moves the consumers (the tenants' event rules) itself. */
  rewritesRules: boolean;
}

/** The pair's keys, as far as the proof is concerned. */
export interface KeyPair {
  oldKeyId: string;
  newKeyId: string;
}

/** The usage records of one check, as the `rotationKeyUsage` activity answers them. */
export interface KeyUsageRecords {
  checkedAt: string;
  keys: Record<string, { lastUsedAt: string | null } | undefined>;
}

/** The rotation's switch rule: its pair's proof, with the quiet period that proof asks for. */
export function switchRule({ proof, settings }: RotationInput): SwitchRule {
  const holderWindowMs = settings.holderWindowMs ?? 0;
  const quietMs = proof === 'holders' ? Math.max(settings.quietPeriodMs, holderWindowMs) : settings.quietPeriodMs;
  return { proof, quietMs, holderWindowMs, rewritesRules: proof === 'rules' };
}

/**
 * After an exposure the old key's use proves nothing (it may be the attacker's): no quiet period,
 * only the notice window.
 */
export function isExposureRotation({ reason, settings }: RotationInput): boolean {
  return reason === 'exposure' && settings.exposureNoticeMs !== undefined;
}

/** One reading of the records: when each key was last used, and since when the old one is silent. */
interface Reading {
  records: KeyUsageRecords;
  checkedAt: number;
  newLast: string | null;
  oldLast: string | null;
  quietFrom: number;
  switchedAt: number;
}

function read(records: KeyUsageRecords, keys: KeyPair, switchedAt: number): Reading {
  const newLast = records.keys[keys.newKeyId]?.lastUsedAt ?? null;
  const oldLast = records.keys[keys.oldKeyId]?.lastUsedAt ?? null;
  return {
    records,
    checkedAt: Date.parse(records.checkedAt),
    newLast,
    oldLast,
    quietFrom: Math.max(switchedAt, oldLast ? Date.parse(oldLast) : 0),
    switchedAt,
  };
}

const oldSilentMs = (r: Reading) => Math.max(0, r.checkedAt - r.quietFrom);

/** The old key was used within the holder window before the switch (or after it): someone held it. */
const oldKeyHeld = (r: Reading, rule: SwitchRule) =>
  r.oldLast !== null && Date.parse(r.oldLast) >= r.switchedAt - rule.holderWindowMs;

/** `calls`: the new key id used, and the old one silent for the quiet period. */
function callsProof(r: Reading, rule: SwitchRule): { check: UsageCheck; proven: boolean } {
  const check = { checkedAt: r.records.checkedAt, newKeyUsed: r.newLast !== null, oldSilentMs: oldSilentMs(r) };
  return { check, proven: r.newLast !== null && r.checkedAt - r.quietFrom >= rule.quietMs };
}

/**
 * `holders` and `per-run` (and `rules` once the rules are rewritten): the old key id silent for the
 * quiet period; `holders` also needs the new key used if a process held the old one at the switch
 * (nothing outlives a `per-run` run).
 */
function quietProof(r: Reading, rule: SwitchRule): { check: UsageCheck; proven: boolean } {
  const newKeyNeeded = rule.proof === 'holders' && oldKeyHeld(r, rule);
  const check = {
    checkedAt: r.records.checkedAt,
    newKeyUsed: r.newLast !== null,
    newKeyNeeded,
    oldSilentMs: oldSilentMs(r),
    quietMs: rule.quietMs,
  };
  return { check, proven: (r.newLast !== null || !newKeyNeeded) && r.checkedAt - r.quietFrom >= rule.quietMs };
}

/**
 * After an exposure: the notice window passed since the switch, and the new key id used where the
 * proof needs it (`calls`: always; `holders`: when the old key was held; `per-run`, `rules`: never).
 */
function exposureProof(r: Reading, rule: SwitchRule, noticeMs: number): { check: UsageCheck; proven: boolean } {
  const newKeyNeeded = rule.proof === 'calls' || (rule.proof === 'holders' && oldKeyHeld(r, rule));
  const check = {
    checkedAt: r.records.checkedAt,
    newKeyUsed: r.newLast !== null,
    newKeyNeeded,
    oldSilentMs: oldSilentMs(r),
    quietMs: noticeMs,
  };
  return { check, proven: (r.newLast !== null || !newKeyNeeded) && r.checkedAt - r.switchedAt >= noticeMs };
}

/** Whether one check proves the switch, by the rotation's rule; `noticeMs` only after an exposure. */
export function judgeUsage(
  rule: SwitchRule,
  noticeMs: number | undefined,
  keys: KeyPair,
  switchedAt: number,
  records: KeyUsageRecords,
): { check: UsageCheck; proven: boolean } {
  const reading = read(records, keys, switchedAt);
  if (noticeMs !== undefined) return exposureProof(reading, rule, noticeMs);
  if (rule.proof === 'calls') return callsProof(reading, rule);
  return quietProof(reading, rule);
}

/** What the rotation waits for until its next check (the timer's summary in the Temporal UI). */
export function waitSummary(
  caller: string,
  keys: KeyPair,
  check: UsageCheck,
  exposureNoticeLeftMs: number | undefined,
): string {
  const { oldKeyId, newKeyId } = keys;
  if (exposureNoticeLeftMs !== undefined) {
    // an exposure waits for the notice window (and the new key's use), never for the old key's silence
    return exposureNoticeLeftMs > 0
      ? `exposure: notice window for ${caller} to take ${newKeyId}, ${Math.ceil(exposureNoticeLeftMs / 1000)} s left, then ${oldKeyId} is revoked`
      : `exposure: waiting for ${caller} to use ${newKeyId} before ${oldKeyId} is revoked`;
  }
  const waitingForNewKey = !check.newKeyUsed && check.newKeyNeeded !== false;
  return waitingForNewKey
    ? `waiting for ${caller} to use ${newKeyId}`
    : `${oldKeyId} silent for ${Math.round(check.oldSilentMs / 1000)} s`;
}

/** Why a rotation whose consumer did not prove the switch by the deadline rolls back. */
export function unprovenReason(
  caller: string,
  keys: KeyPair,
  last: UsageCheck,
  settings: { quietPeriodMs: number; deadlineMs: number },
): string {
  return last.newKeyUsed || last.newKeyNeeded === false
    ? `${caller} still used ${keys.oldKeyId} within the quiet period at the deadline (silent ${Math.round(last.oldSilentMs / 1000)} s of ${Math.round((last.quietMs ?? settings.quietPeriodMs) / 1000)} s)`
    : `${caller} never used ${keys.newKeyId} within ${Math.round(settings.deadlineMs / 1000)} s`;
}
