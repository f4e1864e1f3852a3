/**
 * The service-key rotation workflows as their starters see them (the implementation:
 * workflows/rotate-service-key.ts): type names, ids, the settings, input and result. Key ids and
 * versions only: a rotation's input, result and history never hold a key. No Node built-ins:
 * bundled into the workflow sandbox too.
 */
import type { SwitchProof } from './inventory.js';

/** The workflow type of one numbered rotation `rotate:<caller>:<target>:<n>`. */
export const ROTATE_SERVICE_KEY_WORKFLOW = 'rotateServiceKey';
/** The workflow type the annual schedules run (it starts a numbered rotation). */
export const ANNUAL_ROTATION_WORKFLOW = 'annualServiceKeyRotation';

export const rotationWorkflowId = (caller: string, target: string, n: number) => `rotate:${caller}:${target}:${n}`;
/** The annual rotation schedule of a pair. */
export const rotationScheduleId = (caller: string, target: string) => `rotate-annual:${caller}:${target}`;

export type RotationReason = 'annual' | 'exposure' | 'manual';

/** The durations a rotation runs with (from the configuration at start), in ms. */
export interface RotationSettings {
  /** After registering the new key pending: wait before the consumer gets it (targets' reload). */
  acceptWaitMs: number;
  /** The old key must be silent this long in the target's usage records. */
  quietPeriodMs: number;
  pollIntervalMs: number;
  /** From the hand-over to the consumer: roll back when it has not switched by then. */
  deadlineMs: number;
  /** On roll-back: wait before revoking the new key (consumers' secret cache TTL). */
  rollbackWaitMs: number;
  /** Shorter activity retry intervals (tests). */
  retryIntervals?: { initialMs: number; maximumMs: number };
  /**
   * `holders` pairs: the longest a process holding the key can stay silent in the target's records
   * (two heartbeats plus the usage flush). Their quiet period is at least this; and an old key used
   * this close before the switch had a holder, which must then show up on the new key.
   */
  holderWindowMs?: number;
  /**
   * `exposure` rotations (docs/operators.md "Service keys", "Switch proof"): how long after the switch every running holder
   * has announced the new version (a secret-cache tick) and its target has written that down (a
   * usage flush). Once the consumer has proved the switch and this has passed, the old key dies,
   * whatever it is still used for (after an exposure, that use may be the attacker's). Absent:
   * an exposure rotation waits for the quiet period like any other.
   */
  exposureNoticeMs?: number;
  /** `exposure` rotations: how often the usage records are read (a usage flush). */
  exposurePollMs?: number;
}

export interface RotationInput {
  caller: string;
  target: string;
  n: number;
  reason: RotationReason;
  settings: RotationSettings;
  /** How the consumer proves the switch (inventory.ts). */
  proof: SwitchProof;
}

export interface RotationResult {
  outcome: 'completed' | 'rolled-back';
  oldKeyId: string;
  newKeyId: string;
  /** Why it rolled back. */
  message?: string;
}

/** The signature the workflow implements (checked in workflows/index.ts); typed starts use it. */
export type RotateServiceKeyWorkflow = (input: RotationInput) => Promise<RotationResult>;

/** CloudEvent type raised when a rotation rolls back. */
export const SERVICE_KEY_ROTATION_FAILED = 'service-key.rotation-failed';
