/**
 * The lifecycle of one TenantClient (workflow id `tenant:<name>`), like a controller's reconcile
 * loop: reconcile the composed resources (subdomain, database, API user, route, filestore, backup
 * schedule, chat room), probe the tenant until Ready, emit `client.provisioned` once, then wait for
 * the next apply or operator action. Cancel starts the soak timer; when it ends (or on delete after
 * a cancel) the tenant is deprovisioned and the workflow ends with its final status.
 *
 * Every step is an idempotent activity, so a worker crash anywhere only repeats a step. Time comes
 * from the SDK's deterministic clock (`Date` inside the workflow sandbox).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { chatRoomName, searchAttributes } from './definitions.js';
import {
  applySignal,
  backupScheduleId,
  cancelUpdate,
  deleteUpdate,
  newResources,
  reactivateUpdate,
  resourceErrors,
  retryChatRoomUpdate,
  routeNamespace,
  setCondition,
  statusQuery,
  TenantErrorType,
  unreadyMessage,
  unreadyResources,
  type LifecycleState,
  type ResourceKind,
  type ResourceState,
  type TenantLifecycleInput,
  type TenantStatus,
} from './tenant-definitions.js';

/** Reconcile steps: a few quick retries, then the failure is recorded and the next reconcile tries again. */
const stepOptions: ActivityOptions = {
  // short: a worker that dies mid-step has the step retried on another worker after this long
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 4 },
};
/** The chat room is non-fatal: fewer attempts, the failure is recorded on the room. */
const chatOptions: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumAttempts: 3 },
};
/** Deprovisioning must finish: retry until it does. */
const teardownOptions: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
};

const steps = proxyActivities<Activities>(stepOptions);
const { recordTenantStatus } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' },
});

const HISTORY_LIMIT = 5_000;
const RECENT_STEPS = 30;

const nowIso = () => new Date().toISOString();

function initialState(input: TenantLifecycleInput): LifecycleState {
  const at = nowIso();
  return {
    name: input.name,
    spec: input.spec,
    generation: input.generation,
    observedGeneration: 0,
    phase: 'Provisioning',
    conditions: [
      { type: 'Synced', status: 'Unknown', reason: 'ReconcileSuccess', message: 'not reconciled yet', lastTransitionTime: at, observedGeneration: 0 },
      { type: 'Ready', status: 'False', reason: 'Creating', message: 'Unready resources: database, apiUser, route, filestore, backupSchedule', lastTransitionTime: at, observedGeneration: 0 },
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

/** Provisions, keeps and finally deprovisions one tenant. Returns the final status. */
export async function tenantLifecycle(input: TenantLifecycleInput): Promise<TenantStatus> {
  const { settings } = input;
  const s: LifecycleState = input.carried ?? initialState(input);
  let dirty = !input.carried || s.phase !== 'Ready'; // something to reconcile
  let changed = true; // status to mirror

  const status = (): TenantStatus => {
    const { spec: _spec, hostname: _h, deadlineAt: _d, chatRetry: _c, deleteRequested: _r, ...rest } = s;
    return JSON.parse(JSON.stringify(rest)) as TenantStatus;
  };
  const cancelled = () => s.cancelledAt !== undefined;
  const tearingDown = () => s.phase === 'Deprovisioning' || s.phase === 'Deprovisioned';

  // ---- messages ----
  setHandler(statusQuery, status);
  setHandler(applySignal, ({ generation, spec }) => {
    if (generation <= s.generation) return; // the same apply again, or an older one
    s.generation = generation;
    s.spec = spec;
    s.deadlineAt = Date.now() + settings.readyDeadlineMs;
    dirty = true;
    changed = true;
  });
  setHandler(
    cancelUpdate,
    () => {
      s.cancelledAt = nowIso();
      s.deprovisionAt = new Date(Date.now() + settings.soakPeriodMs).toISOString();
      s.phase = 'Cancelled';
      recordStep('cancel', 'ok', `soak period started; deprovisioning at ${s.deprovisionAt} unless reactivated`);
      changed = true;
      return status();
    },
    {
      validator: () => {
        if (tearingDown()) throw new Error(`tenant ${s.name} is already ${s.phase.toLowerCase()}`);
        if (cancelled()) throw new Error(`tenant ${s.name} is already cancelled; it is deprovisioned at ${s.deprovisionAt}`);
      },
    },
  );
  setHandler(
    reactivateUpdate,
    () => {
      s.cancelledAt = undefined;
      s.deprovisionAt = undefined;
      s.phase = getReady()?.status === 'True' ? 'Ready' : 'Provisioning';
      recordStep('reactivate', 'ok', 'soak timer stopped; the tenant stays');
      dirty = true;
      changed = true;
      return status();
    },
    {
      validator: () => {
        if (tearingDown()) throw new Error(`tenant ${s.name} is ${s.phase.toLowerCase()}; it can no longer be reactivated`);
        if (!cancelled()) throw new Error(`tenant ${s.name} is not cancelled; there is nothing to reactivate`);
      },
    },
  );
  setHandler(
    deleteUpdate,
    () => {
      s.deleteRequested = true;
      recordStep('delete', 'ok', 'deprovisioning now instead of at the end of the soak period');
      changed = true;
      return status();
    },
    {
      validator: () => {
        if (tearingDown()) throw new Error(`tenant ${s.name} is already ${s.phase.toLowerCase()}`);
        if (!cancelled()) throw new Error(`tenant ${s.name} is active: cancel it first (deprovisioning follows the soak period, or a delete after the cancel)`);
      },
    },
  );
  setHandler(
    retryChatRoomUpdate,
    () => {
      s.chatRetry = true;
      dirty = true;
      recordStep('retry-chat-room', 'ok', 'the chat room is created again on this reconcile');
      return status();
    },
    {
      validator: () => {
        if (tearingDown() || cancelled()) throw new Error(`tenant ${s.name} is ${s.phase.toLowerCase()}; its chat room is not reconciled`);
      },
    },
  );

  // ---- helpers ----
  function getReady() {
    return s.conditions.find((c) => c.type === 'Ready');
  }

  function recordStep(step: string, outcome: 'ok' | 'failed' | 'skipped', message: string) {
    s.steps = [...s.steps, { step, at: nowIso(), outcome, message }].slice(-RECENT_STEPS);
  }

  function setResource(kind: ResourceKind, next: Omit<ResourceState, 'lastTransitionTime'>) {
    const prev = s.resources[kind];
    const moved = prev.synced !== next.synced || prev.state !== next.state;
    s.resources[kind] = { ...next, lastTransitionTime: moved ? nowIso() : prev.lastTransitionTime };
    changed = true;
  }

  function setStep(step: string) {
    s.currentStep = step;
    upsertSearchAttributes([{ key: searchAttributes.currentStep, value: step }]);
  }

  async function mirror() {
    if (!changed) return;
    changed = false;
    await recordTenantStatus({ name: s.name, uid: input.uid, status: status() });
  }

  const failureMessage = (err: unknown) => {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    return cause instanceof Error ? cause.message : String(cause);
  };

  /**
   * Runs one reconcile step: the current step shown, `done` records the result, a failure is kept
   * on the resource; then the status is mirrored.
   */
  async function reconcileStep<T>(step: string, kind: ResourceKind, run: () => Promise<T>, done: (result: T) => void): Promise<void> {
    setStep(step);
    try {
      done(await run());
    } catch (err) {
      const message = failureMessage(err);
      recordStep(step, 'failed', message);
      setResource(kind, { externalName: s.resources[kind].externalName, synced: 'False', state: 'Failed', message });
    }
    await mirror();
  }

  function setSynced(generation: number) {
    const errors = resourceErrors(s.resources).filter((e) => !e.startsWith('chatRoom:'));
    const chatFailed = s.resources.chatRoom.state === 'Failed';
    s.conditions = setCondition(
      s.conditions,
      errors.length
        ? { type: 'Synced', status: 'False', reason: 'ReconcileError', message: errors.join('; '), observedGeneration: generation }
        : {
            type: 'Synced',
            status: 'True',
            reason: 'ReconcileSuccess',
            message: chatFailed ? `chatRoom failed (non-fatal, retry with \`retry chat-room ${s.name}\`): ${s.resources.chatRoom.message}` : '',
            observedGeneration: generation,
          },
      nowIso(),
    );
  }

  function setReady(status: 'True' | 'False', reason: 'Available' | 'Creating' | 'Unavailable' | 'Deleting', message: string) {
    s.conditions = setCondition(s.conditions, { type: 'Ready', status, reason, message, observedGeneration: s.generation }, nowIso());
    changed = true;
  }

  // ---- one reconcile ----
  async function reconcile(): Promise<'ready' | 'not-ready' | 'blocked'> {
    const generation = s.generation;
    const spec = s.spec;
    const tenant = s.name;
    if (s.phase !== 'Cancelled' && getReady()?.status !== 'True') s.phase = Date.now() >= s.deadlineAt ? 'Unavailable' : 'Provisioning';
    upsertSearchAttributes([
      { key: searchAttributes.tier, value: spec.tier },
      { key: searchAttributes.erpVersion, value: spec.erpVersion },
    ]);

    // 1. the subdomain: a unique constraint decides, not a check-then-insert
    setStep('reserve-subdomain');
    try {
      const reserved = await steps.reserveSubdomain.executeWithOptions(
        { ...stepOptions, summary: `Reserve subdomain ${spec.subdomain}` },
        [{ name: tenant, uid: input.uid, spec }],
      );
      s.hostname = reserved.hostname;
      recordStep('reserve-subdomain', 'ok', `subdomain ${spec.subdomain} ${reserved.reserved === 'new' ? 'reserved' : 'already reserved for this tenant'}`);
    } catch (err) {
      const message = failureMessage(err);
      recordStep('reserve-subdomain', 'failed', message);
      const taken = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === TenantErrorType.SubdomainTaken;
      s.conditions = setCondition(s.conditions, { type: 'Synced', status: 'False', reason: 'ReconcileError', message, observedGeneration: generation }, nowIso());
      setReady('False', taken ? 'Unavailable' : 'Creating', message);
      if (taken) s.phase = 'Unavailable';
      await mirror();
      return taken ? 'blocked' : 'not-ready';
    }
    const host = s.hostname;
    const database = host;

    // 2. the database, cloned from the template of tier × version
    await reconcileStep(
      'clone-database',
      'database',
      () =>
        steps.cloneTenantDatabase.executeWithOptions(
          { ...stepOptions, startToCloseTimeout: '5 minutes', summary: `CREATE DATABASE "${database}" from the ${spec.tier}/${spec.erpVersion} template` },
          [{ database, spec }],
        ),
      (db) => {
        if (db.outcome === 'template-missing') {
          const message = `template database "${db.template}" does not exist`;
          setResource('database', { externalName: database, synced: 'False', state: 'Failed', message });
          recordStep('clone-database', 'failed', message);
        } else {
          setResource('database', { externalName: database, synced: 'True', state: 'Created', message: `cloned from ${db.template}` });
          recordStep('clone-database', 'ok', db.outcome === 'created' ? `created from ${db.template}` : 'exists');
        }
      },
    );

    // 3. the dedicated ERP API user (needs the database)
    await reconcileStep(
      'ensure-api-user',
      'apiUser',
      () => steps.ensureErpApiUser.executeWithOptions({ ...stepOptions, summary: `Ensure the ERP API user of ${database}` }, [{ tenant, database }]),
      (apiUser) => {
        if (apiUser.outcome === 'database-missing') {
          setResource('apiUser', { externalName: '', synced: 'False', state: 'Pending', message: 'waiting for the database' });
          recordStep('ensure-api-user', 'skipped', 'waiting for the database');
        } else {
          setResource('apiUser', { externalName: apiUser.login, synced: 'True', state: 'Created', message: '' });
          recordStep('ensure-api-user', 'ok', `${apiUser.login} ${apiUser.outcome}`);
        }
      },
    );

    // 4. the route, in namespace plana-odoo-<erpVersion>
    const namespace = routeNamespace(spec.erpVersion);
    await reconcileStep(
      'create-route',
      'route',
      () => steps.createRoute.executeWithOptions({ ...stepOptions, summary: `Route ${host} in ${namespace}` }, [{ host, tenant, namespace, database }]),
      (route) => {
        setResource('route', { externalName: `${namespace}/${host}`, synced: 'True', state: 'Created', message: '' });
        recordStep('create-route', 'ok', `${host} → ${database} (${route.outcome})`);
      },
    );

    // 5. the filestore folder
    await reconcileStep(
      'create-filestore',
      'filestore',
      () => steps.createFilestore.executeWithOptions({ ...stepOptions, summary: `Create the filestore folder of ${tenant}` }, [{ tenant }]),
      (filestore) => {
        setResource('filestore', { externalName: filestore.path, synced: 'True', state: 'Created', message: '' });
        recordStep('create-filestore', 'ok', `${filestore.path} ${filestore.created ? 'created' : 'exists'}`);
      },
    );

    // 6. the backup schedule
    await reconcileStep(
      'create-backup-schedule',
      'backupSchedule',
      () =>
        steps.createBackupSchedule.executeWithOptions(
          { ...stepOptions, summary: `Schedule ${backupScheduleId(tenant)}` },
          [{ tenant, tier: spec.tier, database }],
        ),
      (schedule) => {
        setResource('backupSchedule', { externalName: schedule.scheduleId, synced: 'True', state: 'Created', message: '' });
        recordStep('create-backup-schedule', 'ok', `${schedule.scheduleId} ${schedule.outcome}`);
      },
    );

    // 7. the support chat room: non-fatal (a failure stays on the room; retry-chat-room tries again)
    if (s.resources.chatRoom.state !== 'Created' || s.chatRetry) {
      s.chatRetry = false;
      const roomName = chatRoomName(spec.subdomain, spec.projectId);
      s.resources.chatRoom.externalName = roomName;
      await reconcileStep(
        'ensure-chat-room',
        'chatRoom',
        () => steps.ensureChatRoom.executeWithOptions({ ...chatOptions, summary: `Create chat room ${roomName} (non-fatal)` }, [{ spec }]),
        (room) => {
          setResource('chatRoom', { externalName: room.room, synced: 'True', state: 'Created', message: '' });
          recordStep('ensure-chat-room', 'ok', `${room.room} ${room.created ? 'created' : room.restored ? 'restored' : 'exists'}`);
        },
      );
    }

    setSynced(generation);
    const unready = unreadyResources(s.resources);
    if (getReady()?.status !== 'True') setReady('False', 'Creating', unreadyMessage(s.resources) || 'waiting for the tenant health probe');
    await mirror();

    // 8. readiness: probe through the route until healthy (up to the deadline while everything is in place)
    setStep('probe-health');
    const beforeDeadline = s.deadlineAt - Date.now();
    const windowMs = unready.length === 0 && beforeDeadline > 0 ? beforeDeadline : 0;
    const seen = await steps.probeTenantHealth
      .executeWithOptions(
        {
          startToCloseTimeout: windowMs + 60_000,
          heartbeatTimeout: '30 seconds',
          retry: { maximumAttempts: 3 },
          summary: `GET /web/health with Host ${host}`,
        },
        [{ host, windowMs, intervalMs: settings.probeIntervalMs }],
      )
      .catch((err) => ({ healthy: false, httpStatus: 0, detail: failureMessage(err), attempts: 0 }));

    if (seen.healthy && unready.length === 0) {
      recordStep('probe-health', 'ok', seen.detail);
      s.observedGeneration = generation;
      s.readyAt ??= nowIso();
      if (s.phase !== 'Cancelled') s.phase = 'Ready';
      setReady('True', 'Available', '');
      await mirror();
      if (!s.provisionedEventId) {
        setStep('publish-provisioned-event');
        // keep trying: the event leads to the welcome e-mail and the portal entry
        const published = await steps.publishProvisionedEvent.executeWithOptions(
          { ...teardownOptions, summary: `Emit client.provisioned for ${tenant}` },
          [{ tenant, generation, spec }],
        );
        s.provisionedEventId = published.eventId;
        recordStep('publish-provisioned-event', 'ok', `${published.eventId}${published.duplicate ? ' (already on the stream)' : ''}`);
        changed = true;
      }
      setStep('ready');
      await mirror();
      return 'ready';
    }

    recordStep('probe-health', 'failed', seen.detail);
    s.observedGeneration = generation;
    if (Date.now() >= s.deadlineAt) {
      const blockers = resourceErrors(s.resources).filter((e) => !e.startsWith('chatRoom:'));
      const waitedFor = Math.round(settings.readyDeadlineMs / 1000);
      const message = [`not Ready ${waitedFor}s after the apply`, seen.detail, unreadyMessage(s.resources), ...blockers]
        .filter(Boolean)
        .join('; ');
      setReady('False', 'Unavailable', message);
      if (s.phase !== 'Cancelled') s.phase = 'Unavailable';
    } else {
      setReady('False', 'Creating', [unreadyMessage(s.resources), seen.detail].filter(Boolean).join('; '));
    }
    setStep('waiting-to-retry');
    await mirror();
    return 'not-ready';
  }

  // ---- deprovisioning (§3.2) ----
  async function deprovision(): Promise<void> {
    const spec = s.spec;
    const tenant = s.name;
    const database = s.hostname || s.resources.database.externalName;
    s.phase = 'Deprovisioning';
    setReady('False', 'Deleting', 'Deprovisioning: route, database, filestore, backup schedule; the chat room is archived');
    await mirror();

    const teardown = async (step: string, run: () => Promise<unknown>) => {
      setStep(step);
      await run();
      await mirror();
    };
    const gone = (kind: ResourceKind, message: string) =>
      setResource(kind, { externalName: s.resources[kind].externalName, synced: 'True', state: 'Deleted', message });

    // a last backup, kept with the others for the tier's retention
    if (s.resources.database.state === 'Created') {
      await teardown('final-backup', async () => {
        try {
          const backup = await steps.createTenantBackup.executeWithOptions(
            { ...stepOptions, startToCloseTimeout: '10 minutes', summary: `Final backup of ${tenant} before deprovisioning` },
            [{ tenant, tier: spec.tier, database, stamp: `${nowIso()}-final` }],
          );
          recordStep('final-backup', 'ok', backup.files.map((f) => f.path).join(', '));
        } catch (err) {
          // the scheduled backups are still there; a failed last one does not keep the tenant alive
          recordStep('final-backup', 'failed', failureMessage(err));
        }
      });
    }
    await teardown('remove-route', async () => {
      const r = await steps.removeRoute.executeWithOptions({ ...teardownOptions, summary: `Remove the route of ${tenant}` }, [{ tenant }]);
      gone('route', `route ${r.outcome}`);
      recordStep('remove-route', 'ok', r.outcome);
    });
    await teardown('drop-database', async () => {
      const r = await steps.dropTenantDatabase.executeWithOptions(
        { ...teardownOptions, summary: `DROP DATABASE "${database}"` },
        [{ database }],
      );
      gone('database', `database ${r.outcome}`);
      gone('apiUser', 'removed with the database');
      recordStep('drop-database', 'ok', `${database} ${r.outcome}`);
    });
    await teardown('wipe-filestore', async () => {
      const r = await steps.wipeFilestore.executeWithOptions({ ...teardownOptions, summary: `Wipe the filestore folder of ${tenant}` }, [{ tenant }]);
      gone('filestore', r.wiped ? 'wiped' : 'was already gone');
      recordStep('wipe-filestore', 'ok', r.path);
    });
    await teardown('delete-backup-schedule', async () => {
      const r = await steps.deleteBackupSchedule.executeWithOptions(
        { ...teardownOptions, summary: `Delete schedule ${backupScheduleId(tenant)} (stored backups stay)` },
        [{ tenant }],
      );
      gone('backupSchedule', `schedule ${r.outcome}; stored backups kept for the ${spec.tier} retention`);
      recordStep('delete-backup-schedule', 'ok', r.outcome);
    });
    setStep('archive-chat-room');
    try {
      const r = await steps.archiveChatRoom.executeWithOptions(
        { ...chatOptions, summary: `Archive chat room ${chatRoomName(spec.subdomain, spec.projectId)} (inactive)` },
        [{ spec }],
      );
      setResource('chatRoom', { externalName: r.room, synced: 'True', state: 'Archived', message: `room ${r.outcome} (inactive)` });
      recordStep('archive-chat-room', 'ok', r.outcome);
    } catch (err) {
      // non-fatal like its creation: recorded, the tenant is deprovisioned regardless
      const message = failureMessage(err);
      setResource('chatRoom', { externalName: s.resources.chatRoom.externalName, synced: 'False', state: 'Failed', message });
      recordStep('archive-chat-room', 'failed', message);
    }

    s.phase = 'Deprovisioned';
    s.deprovisionedAt = nowIso();
    s.conditions = setCondition(
      s.conditions,
      { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '', observedGeneration: s.generation },
      nowIso(),
    );
    setReady('False', 'Deleting', `Deprovisioned at ${s.deprovisionedAt}; stored backups are kept for the ${spec.tier} tier's retention`);
    setStep('deprovisioned');
    await mirror();
  }

  // ---- the loop ----
  upsertSearchAttributes([
    { key: searchAttributes.tenant, value: s.name },
    { key: searchAttributes.workspace, value: s.name },
  ]);
  let outcome: 'ready' | 'not-ready' | 'blocked' = s.phase === 'Ready' ? 'ready' : 'not-ready';
  let failedRounds = 0;
  for (;;) {
    if (cancelled()) {
      await mirror();
      setStep('soak-period');
      const remaining = Date.parse(s.deprovisionAt!) - Date.now();
      if (remaining > 0) {
        await condition(() => !cancelled() || s.deleteRequested, remaining, { summary: `Soak period until ${s.deprovisionAt}` });
      }
      if (cancelled()) {
        await deprovision();
        await condition(allHandlersFinished);
        log.info('tenant deprovisioned', { tenant: s.name });
        return status();
      }
      continue; // reactivated
    }

    if (dirty || outcome === 'not-ready') {
      dirty = false;
      outcome = await reconcile();
      failedRounds = outcome === 'ready' ? 0 : failedRounds + 1;
    }
    await mirror();
    if (cancelled()) continue;

    if (outcome === 'not-ready') {
      // exponential backoff, but never past the readiness deadline, so it is reported on time
      const backoff = Math.min(settings.probeIntervalMs * 2 ** Math.min(failedRounds - 1, 16), settings.reconcileBackoffMaxMs);
      const untilDeadline = s.deadlineAt - Date.now();
      const wait = untilDeadline > 0 ? Math.min(backoff, untilDeadline) : backoff;
      await condition(() => dirty || cancelled() || changed, Math.max(wait, 1), {
        summary: `Back off ${Math.round(wait / 1000)}s before reconciling ${s.name} again`,
      });
    } else {
      setStep(outcome === 'ready' ? 'ready' : 'blocked');
      await condition(() => dirty || cancelled() || changed || workflowInfo().continueAsNewSuggested);
    }

    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > (settings.historyLimit ?? HISTORY_LIMIT)) {
      await mirror();
      await condition(allHandlersFinished);
      recordStep('continue-as-new', 'ok', `history of run ${workflowInfo().runId} has ${workflowInfo().historyLength} events`);
      await continueAsNew<typeof tenantLifecycle>({ ...input, generation: s.generation, spec: s.spec, carried: s });
    }
  }
}
