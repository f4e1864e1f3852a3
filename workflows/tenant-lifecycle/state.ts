/**
 * What the tenant lifecycle workflow keeps about its tenant, and the only code that changes it:
 * the steps taken, the per-resource states, the Crossplane conditions and the current step (also
 * a search attribute, so the Temporal UI can list tenants by step). Pure apart from the search
 * attribute and the published status, which runs the `recordTenantStatus` local activity.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { LifecycleState, TenantLifecycleInput } from '../../domain/tenants/workflow-contract.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import {
  newResources,
  nonFatalResources,
  resourceErrors,
  setCondition,
  type Condition,
  type ReadyReason,
  type ResourceKind,
  type ResourceState,
  type StepRecord,
  type TenantStatus,
} from '../../domain/tenants/types.js';
import type { TraceHeaders } from './reconcile-trace.js';

/** How many recent steps the status keeps. */
const RECENT_STEPS = 30;

export const nowIso = () => new Date().toISOString();

type PublishStatus = (status: TenantStatus, spec: LifecycleState['spec']) => Promise<void>;

export class TenantState {
  /** Something to reconcile: a new spec, a reactivation, a chat-room retry. */
  needsReconcile: boolean;
  /** The trace of the message that asked for the reconcile (reconcile-trace.ts); the rounds until Ready run in it. */
  reconcileTrace: TraceHeaders = {};
  /** The status changed since it was last published to PostgreSQL. */
  private statusChanged = true;
  /** A waited-on step's result is not published yet (a quick step after it publishes it first). */
  private waitedStepResult = false;
  constructor(
    readonly state: LifecycleState,
    private readonly publishStatus: PublishStatus,
  ) {
    this.needsReconcile = state.phase !== 'Ready';
  }

  static initial(input: TenantLifecycleInput): LifecycleState {
    const at = nowIso();
    return {
      name: input.name,
      spec: input.spec,
      generation: input.generation,
      observedGeneration: 0,
      phase: 'Provisioning',
      conditions: [
        {
          type: 'Synced',
          status: 'Unknown',
          reason: 'ReconcileSuccess',
          message: 'not reconciled yet',
          lastTransitionTime: at,
          observedGeneration: 0,
        },
        {
          type: 'Ready',
          status: 'False',
          reason: 'Creating',
          message: 'Unready resources: database, apiUser, route, filestore, backupSchedule',
          lastTransitionTime: at,
          observedGeneration: 0,
        },
      ],
      resources: newResources(at),
      steps: [],
      currentStep: 'queued',
      hostname: '',
      deadlineAt: Date.now() + input.settings.readyDeadlineMs,
      chatRetry: false,
      deleteRequested: false,
    };
  }

  get name(): string {
    return this.state.name;
  }

  /** The status the `status` query answers and PostgreSQL publishes (a copy, without the internals). */
  status(): TenantStatus {
    const {
      spec: _spec,
      hostname: _hostname,
      deadlineAt: _deadline,
      chatRetry: _chatRetry,
      deleteRequested: _delete,
      restoringInPlace: _restoring,
      ...status
    } = this.state;
    return JSON.parse(JSON.stringify(status)) as TenantStatus;
  }

  get isCancelled(): boolean {
    return this.state.cancelledAt !== undefined;
  }

  get isTearingDown(): boolean {
    return this.state.phase === 'Deprovisioning' || this.state.phase === 'Deprovisioned';
  }

  get isReady(): boolean {
    return this.condition('Ready')?.status === 'True';
  }

  get hasUnpublishedChanges(): boolean {
    return this.statusChanged;
  }

  condition(type: Condition['type']): Condition | undefined {
    return this.state.conditions.find((c) => c.type === type);
  }

  /** Marks the status as changed, so the next publish writes it. */
  touch(): void {
    this.statusChanged = true;
  }

  recordStep(step: string, outcome: StepRecord['outcome'], message: string): void {
    this.state.steps = [...this.state.steps, { step, at: nowIso(), outcome, message }].slice(-RECENT_STEPS);
  }

  setResource(kind: ResourceKind, next: Omit<ResourceState, 'lastTransitionTime'>): void {
    const previous = this.state.resources[kind];
    const moved = previous.synced !== next.synced || previous.state !== next.state;
    this.state.resources[kind] = { ...next, lastTransitionTime: moved ? nowIso() : previous.lastTransitionTime };
    this.statusChanged = true;
  }

  /** A resource whose last attempt failed: the failure is kept on it, under its known name. */
  setResourceFailed(kind: ResourceKind, message: string): void {
    this.setResource(kind, {
      externalName: this.state.resources[kind].externalName,
      synced: 'False',
      state: 'Failed',
      message,
    });
  }

  setResourceDeleted(kind: ResourceKind, message: string): void {
    this.setResource(kind, {
      externalName: this.state.resources[kind].externalName,
      synced: 'True',
      state: 'Deleted',
      message,
    });
  }

  /**
   * The step shown in the status and (unless quick) in the `CurrentStep` search attribute. A new step
   * marks the status changed: the published status the workflow makes before it waits writes the step it waits at.
   */
  setCurrentStep(step: string, { quick = false } = {}): void {
    if (this.state.currentStep !== step) this.statusChanged = true;
    this.state.currentStep = step;
    if (!quick) this.showCurrentStep();
  }

  /** The `CurrentStep` search attribute brought up to the status's step (before the workflow waits). */
  showCurrentStep(): void {
    this.setSearchAttributes([{ key: searchAttributes.currentStep, value: this.state.currentStep }]);
  }

  /** Upserts the search attributes whose value changed (each upsert is a command and a visibility write). */
  setSearchAttributes(pairs: SearchAttributeUpdatePair[]): void {
    const current = workflowInfo().typedSearchAttributes;
    const changed = pairs.filter(({ key, value }) => JSON.stringify(current.get(key)) !== JSON.stringify(value));
    if (changed.length) upsertSearchAttributes(changed);
  }

  setSynced(status: 'True' | 'False', message: string, generation: number): void {
    this.state.conditions = setCondition(
      this.state.conditions,
      {
        type: 'Synced',
        status,
        reason: status === 'True' ? 'ReconcileSuccess' : 'ReconcileError',
        message,
        observedGeneration: generation,
      },
      nowIso(),
    );
    this.statusChanged = true;
  }

  /** Synced from the resources: False while one (other than the non-fatal ones) failed. */
  setSyncedFromResources(generation: number): void {
    const errors = this.blockingErrors();
    const { chatRoom, erpSignIn } = this.state.resources;
    if (errors.length) this.setSynced('False', errors.join('; '), generation);
    else
      this.setSynced(
        'True',
        [
          chatRoom.state === 'Failed'
            ? `chatRoom failed (non-fatal, retry with \`retry chat-room ${this.name}\`): ${chatRoom.message}`
            : '',
          erpSignIn.state === 'Failed'
            ? `erpSignIn failed (non-fatal, the next reconcile makes it): ${erpSignIn.message}`
            : '',
        ]
          .filter(Boolean)
          .join('; '),
        generation,
      );
  }

  setReady(status: 'True' | 'False', reason: ReadyReason, message: string): void {
    this.state.conditions = setCondition(
      this.state.conditions,
      { type: 'Ready', status, reason, message, observedGeneration: this.state.generation },
      nowIso(),
    );
    this.statusChanged = true;
  }

  /** The failures that keep the tenant from being Synced (the non-fatal resources' never do). */
  blockingErrors(): string[] {
    return resourceErrors(this.state.resources).filter((e) => !nonFatalResources.some((k) => e.startsWith(`${k}:`)));
  }

  /** A waited-on step has recorded its result. */
  recordedWaitedStep(): void {
    this.waitedStepResult = true;
  }

  /** Before a quick step: the result of the waited-on step before it, published (a quick step that hangs leaves it visible). */
  async publishWaitedStepResult(): Promise<void> {
    if (this.waitedStepResult) await this.publish();
  }

  /** Writes the status to PostgreSQL (for `get`, the portal and the API) when it changed. */
  async publish(): Promise<void> {
    this.waitedStepResult = false;
    if (!this.statusChanged) return;
    this.statusChanged = false;
    await this.publishStatus(this.status(), this.state.spec);
  }
}
