/**
 * The tenant lifecycle's message handlers: the status query, apply, cancel / reactivate / delete
 * (the soak period) and retry-chat-room; each update refused where it makes no sense.
 */
import { setHandler } from '@temporalio/workflow';
import {
  applySignal,
  cancelUpdate,
  deleteUpdate,
  reactivateUpdate,
  tenantClientDeletedUpdate,
  retryChatRoomUpdate,
  statusQuery,
  type TenantLifecycleInput,
} from '../../domain/tenants/workflow-contract.js';
import { nowIso, type TenantState } from './state.js';
import { handledMessageTrace } from './reconcile-trace.js';

/** The status query; apply; cancel, reactivate and delete (setSoakHandlers); retry-chat-room; each update refused where it makes no sense. */
export function setMessageHandlers(tenant: TenantState, input: TenantLifecycleInput): void {
  const { settings } = input;
  const state = tenant.state;
  const phase = () => state.phase.toLowerCase();
  setHandler(statusQuery, () => tenant.status());

  setHandler(applySignal, ({ uid, generation, spec }) => {
    if (uid !== input.uid) {
      tenant.recordStep('apply', 'failed', `ignored: TenantClient object ${uid} is not this tenant's (${input.uid})`);
      tenant.touch();
      return;
    }
    if (generation < state.generation) return; // an older apply
    if (generation === state.generation) {
      // the same apply again; or the one that started this workflow, whose reconcile is pending: its trace
      if (tenant.needsReconcile) tenant.reconcileTrace = handledMessageTrace();
      return;
    }
    state.generation = generation;
    state.spec = spec;
    state.deadlineAt = Date.now() + settings.readyDeadlineMs;
    tenant.needsReconcile = true;
    tenant.reconcileTrace = handledMessageTrace();
    tenant.touch();
  });

  setSoakHandlers(tenant, settings);

  setHandler(
    retryChatRoomUpdate,
    () => {
      state.chatRetry = true;
      tenant.needsReconcile = true;
      tenant.reconcileTrace = handledMessageTrace();
      tenant.recordStep('retry-chat-room', 'ok', 'the chat room is created again on this reconcile');
      return tenant.status();
    },
    {
      validator: () => {
        if (tenant.isTearingDown || tenant.isCancelled)
          throw new Error(`tenant ${state.name} is ${phase()}; its chat room is not reconciled`);
      },
    },
  );
}

/** Cancel (starts the soak period), its TenantClient deleted (a cancel for good), reactivate (stops it) and delete (ends it now). */
function setSoakHandlers(tenant: TenantState, settings: TenantLifecycleInput['settings']): void {
  const state = tenant.state;
  const phase = () => state.phase.toLowerCase();
  const cancel = () => {
    state.cancelledAt = nowIso();
    state.deprovisionAt = new Date(Date.now() + settings.soakPeriodMs).toISOString();
    state.phase = 'Cancelled';
    tenant.recordStep(
      'cancel',
      'ok',
      `soak period started; deprovisioning at ${state.deprovisionAt} unless reactivated`,
    );
    tenant.touch();
  };
  setHandler(
    cancelUpdate,
    () => {
      cancel();
      return tenant.status();
    },
    {
      validator: () => {
        if (tenant.isTearingDown) throw new Error(`tenant ${state.name} is already ${phase()}`);
        if (tenant.isCancelled)
          throw new Error(`tenant ${state.name} is already cancelled; it is deprovisioned at ${state.deprovisionAt}`);
      },
    },
  );

  setHandler(
    tenantClientDeletedUpdate,
    () => {
      state.tenantClientDeletedAt = nowIso();
      if (!tenant.isCancelled) cancel();
      tenant.recordStep('tenantclient-deleted', 'ok', `deprovisioning at ${state.deprovisionAt}; no reactivation`);
      tenant.touch();
      return tenant.status();
    },
    {
      validator: () => {
        if (tenant.isTearingDown) throw new Error(`tenant ${state.name} is already ${phase()}`);
        if (state.tenantClientDeletedAt) throw new Error(`TenantClient ${state.name} is already known deleted`);
      },
    },
  );

  setHandler(
    reactivateUpdate,
    () => {
      state.cancelledAt = undefined;
      state.deprovisionAt = undefined;
      state.phase = tenant.isReady ? 'Ready' : 'Provisioning';
      tenant.recordStep('reactivate', 'ok', 'soak timer stopped; the tenant stays');
      tenant.needsReconcile = true;
      tenant.reconcileTrace = handledMessageTrace();
      tenant.touch();
      return tenant.status();
    },
    {
      validator: () => {
        if (tenant.isTearingDown)
          throw new Error(`tenant ${state.name} is ${phase()}; it can no longer be reactivated`);
        if (!tenant.isCancelled)
          throw new Error(`tenant ${state.name} is not cancelled; there is nothing to reactivate`);
        if (state.tenantClientDeletedAt)
          throw new Error(
            `its TenantClient was deleted (kubectl delete at ${state.tenantClientDeletedAt}), and a deletion cannot be taken back: it is deprovisioned at ${state.deprovisionAt}. To keep the tenant's data, back it up (npm run cli -- backup ${state.name}) and restore it as a new tenant; to stop a tenant with a way back, cancel it instead of deleting it`,
          );
      },
    },
  );

  setHandler(
    deleteUpdate,
    () => {
      state.deleteRequested = true;
      tenant.recordStep('delete', 'ok', 'deprovisioning now instead of at the end of the soak period');
      tenant.touch();
      return tenant.status();
    },
    {
      validator: () => {
        if (tenant.isTearingDown) throw new Error(`tenant ${state.name} is already ${phase()}`);
        if (!tenant.isCancelled)
          throw new Error(
            `tenant ${state.name} is active: cancel it first (deprovisioning follows the soak period, or a delete after the cancel)`,
          );
      },
    },
  );
}
