/**
 * One service-key rotation as it runs (rotate-service-key.ts): its status (the query's answer), its
 * activities with their policies (`mustFinish`, `nonFatal`, `tenantRules`) and its keys; shared by
 * the rotation's steps and the consumers' rules (rotation-consumer-rules.ts).
 */
import {
  defineQuery,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { SwitchProof } from '../domain/service-keys/inventory.js';
import type { RotationInput, RotationResult, RotationSettings } from '../domain/service-keys/workflow-contract.js';
import { searchAttributes } from '../domain/workflow-search-attributes.js';
import type { KeyPair, UsageCheck } from './rotation-switch-proof.js';
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

export function rotationActivities(settings: RotationSettings) {
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

/** Sets up a rotation: its activities, its status query and the step it shows. */
export function startRotation(input: RotationInput): Rotation {
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
