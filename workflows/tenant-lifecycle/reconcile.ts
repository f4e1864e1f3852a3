/**
 * One reconcile of a tenant, in the order of its resources: reserve the subdomain, clone the
 * database, ensure the route, the ERP API user and the tier's ERP modules, the filestore folder, the backup schedule and the
 * (non-fatal) chat room, then probe the tenant until it is healthy or the readiness deadline
 * passes, and emit `client.provisioned` once. Every step is idempotent; a step that fails is
 * recorded on its resource and in the conditions, never thrown out of the workflow.
 */
import { ActivityFailure, ApplicationFailure, patched, upsertSearchAttributes } from '@temporalio/workflow';
import { chatRoomName } from '../../domain/tenants/chat-room.js';
import type { LifecycleSettings } from '../../domain/tenants/workflow-contract.js';
import { searchAttributes } from '../../domain/workflow-search-attributes.js';
import { backupScheduleId, routeNamespace, TenantErrorType, unreadyMessage, unreadyResources, type ResourceKind } from '../../domain/tenants/types.js';
import type { LifecycleActivities } from './activities.js';
import { nowIso, type TenantState } from './state.js';

/** Ready; not Ready yet (reconcile again after a back-off); or blocked until the spec changes. */
export type ReconcileOutcome = 'ready' | 'not-ready' | 'blocked';

export interface ReconcileContext {
  /** The TenantClient's uid (it owns the subdomain reservation). */
  uid: string;
  settings: LifecycleSettings;
  activities: LifecycleActivities;
}

/** The message of an activity's failure: its cause, as the activity raised it. */
export function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}

export function failureType(err: unknown): string | undefined {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? (err.cause.type ?? undefined) : undefined;
}

/**
 * Runs one step: shown as the current step; `onDone` records its result; a failure is kept on the
 * resource and in the recent steps. Then the status is mirrored.
 */
async function runStep<T>(tenant: TenantState, step: string, kind: ResourceKind, run: () => Promise<T>, onDone: (result: T) => void): Promise<void> {
  tenant.setCurrentStep(step);
  try {
    onDone(await run());
  } catch (err) {
    const message = failureMessage(err);
    tenant.recordStep(step, 'failed', message);
    tenant.setResourceFailed(kind, message);
  }
  await tenant.mirror();
}

export async function reconcile(tenant: TenantState, { uid, settings, activities }: ReconcileContext): Promise<ReconcileOutcome> {
  const { reconcileStep, nonFatal, mustFinish } = activities;
  const state = tenant.state;
  const { generation, spec, name } = state;
  if (state.phase !== 'Cancelled' && !tenant.isReady) state.phase = Date.now() >= state.deadlineAt ? 'Unavailable' : 'Provisioning';
  upsertSearchAttributes([
    { key: searchAttributes.tier, value: spec.tier },
    { key: searchAttributes.erpVersion, value: spec.erpVersion },
  ]);

  // 1. the subdomain: a unique constraint decides, not a check-then-insert
  tenant.setCurrentStep('reserve-subdomain');
  try {
    const reserved = await reconcileStep.reserveSubdomain.executeWithOptions({ summary: `Reserve subdomain ${spec.subdomain}` }, [{ name, uid, spec }]);
    state.hostname = reserved.hostname;
    tenant.recordStep('reserve-subdomain', 'ok', `subdomain ${spec.subdomain} ${reserved.reserved === 'new' ? 'reserved' : 'already reserved for this tenant'}`);
  } catch (err) {
    const message = failureMessage(err);
    const taken = failureType(err) === TenantErrorType.SubdomainTaken;
    tenant.recordStep('reserve-subdomain', 'failed', message);
    tenant.setSynced('False', message, generation);
    tenant.setReady('False', taken ? 'Unavailable' : 'Creating', message);
    if (taken) state.phase = 'Unavailable';
    await tenant.mirror();
    return taken ? 'blocked' : 'not-ready';
  }
  const host = state.hostname;
  const database = host;

  // 2. the database, cloned from the template of tier × version
  await runStep(
    tenant,
    'clone-database',
    'database',
    () =>
      reconcileStep.cloneTenantDatabase.executeWithOptions(
        { startToCloseTimeout: '5 minutes', summary: `CREATE DATABASE "${database}" from the ${spec.tier}/${spec.erpVersion} template` },
        [{ database, spec }],
      ),
    (db) => {
      if (db.outcome === 'template-missing') {
        const message = `template database "${db.template}" does not exist`;
        tenant.setResource('database', { externalName: database, synced: 'False', state: 'Failed', message });
        tenant.recordStep('clone-database', 'failed', message);
      } else {
        // an existing database keeps saying where it came from (after a tier change it is not this tier's template)
        const previous = state.resources.database;
        const message = db.outcome === 'created' || previous.state !== 'Created' || !previous.message.startsWith('cloned from') ? `cloned from ${db.template}` : previous.message;
        tenant.setResource('database', { externalName: database, synced: 'True', state: 'Created', message });
        tenant.recordStep('clone-database', 'ok', db.outcome === 'created' ? `created from ${db.template}` : 'exists');
      }
    },
  );

  const namespace = routeNamespace(spec.erpVersion);
  // 3. the dedicated ERP API user (needs the database; made through the ERP, so through the route)
  const ensureApiUser = async () => {
    await runStep(
      tenant,
      'ensure-api-user',
      'apiUser',
      () => reconcileStep.ensureErpApiUser.executeWithOptions({ summary: `Ensure the ERP API user of ${database}` }, [{ tenant: name, database }]),
      (apiUser) => {
        if (apiUser.outcome === 'database-missing') {
          tenant.setResource('apiUser', { externalName: '', synced: 'False', state: 'Pending', message: 'waiting for the database' });
          tenant.recordStep('ensure-api-user', 'skipped', 'waiting for the database');
        } else {
          tenant.setResource('apiUser', { externalName: apiUser.login, synced: 'True', state: 'Created', message: '' });
          tenant.recordStep('ensure-api-user', 'ok', `${apiUser.login} ${apiUser.outcome}`);
        }
      },
    );
  };
  // 4. the route, in namespace plana-odoo-<erpVersion>
  const createRoute = async () => {
    await runStep(
      tenant,
      'create-route',
      'route',
      () => reconcileStep.createRoute.executeWithOptions({ summary: `Route ${host} in ${namespace}` }, [{ host, tenant: name, namespace, database }]),
      (route) => {
        tenant.setResource('route', { externalName: `${namespace}/${host}`, synced: 'True', state: 'Created', message: '' });
        tenant.recordStep('create-route', 'ok', `${host} → ${database} (${route.outcome})`);
      },
    );
  };
  // the API user is made over XML-RPC as the tenant's admin, through the tenant's route: the route
  // comes first (patched: earlier runs made the user by SQL before the route)
  if (patched('api-user-through-the-route')) {
    await createRoute();
    await ensureApiUser();
  } else {
    await ensureApiUser();
    await createRoute();
  }

  // 4b. the tier's ERP modules (DESIGN §5: a tier change installs the new tier's modules; a
  // downgrade keeps what is installed). Kept on the database resource: until the modules are in,
  // the database is not what the spec asks for. (patched: earlier runs only cloned by tier)
  if (patched('tier-modules')) {
    await runStep(
      tenant,
      'ensure-tier-modules',
      'database',
      () =>
        reconcileStep.ensureTierModules.executeWithOptions(
          { startToCloseTimeout: '10 minutes', summary: `Install the ${spec.tier} tier's ERP modules in ${database}` },
          [{ tenant: name, database, tier: spec.tier }],
        ),
      (modules) => {
        if (modules.outcome === 'database-missing') {
          tenant.recordStep('ensure-tier-modules', 'skipped', 'waiting for the database');
          return;
        }
        const parts = [modules.installed.length ? `${spec.tier} modules installed: ${modules.installed.join(', ')}` : `${spec.tier} modules present (${modules.present})`];
        if (modules.kept.length) parts.push(`kept from a higher tier (a downgrade uninstalls nothing): ${modules.kept.join(', ')}`);
        if (modules.unavailable.length) parts.push(`not available on this ERP: ${modules.unavailable.join(', ')}`);
        if (modules.eventRules) parts.push(modules.eventRules);
        tenant.recordStep('ensure-tier-modules', 'ok', parts.join('; '));
      },
    );
  }

  // 5. the filestore folder
  await runStep(
    tenant,
    'create-filestore',
    'filestore',
    () => reconcileStep.createFilestore.executeWithOptions({ summary: `Create the filestore folder of ${name}` }, [{ tenant: name }]),
    (filestore) => {
      tenant.setResource('filestore', { externalName: filestore.path, synced: 'True', state: 'Created', message: '' });
      tenant.recordStep('create-filestore', 'ok', `${filestore.path} ${filestore.created ? 'created' : 'exists'}`);
    },
  );

  // 6. the backup schedule
  await runStep(
    tenant,
    'create-backup-schedule',
    'backupSchedule',
    () =>
      reconcileStep.createBackupSchedule.executeWithOptions({ summary: `Schedule ${backupScheduleId(name)}` }, [{ tenant: name, tier: spec.tier, database }]),
    (schedule) => {
      tenant.setResource('backupSchedule', { externalName: schedule.scheduleId, synced: 'True', state: 'Created', message: '' });
      tenant.recordStep('create-backup-schedule', 'ok', `${schedule.scheduleId} ${schedule.outcome}`);
    },
  );

  // 7. the support chat room: non-fatal (a failure stays on the room; retry-chat-room tries again)
  if (state.resources.chatRoom.state !== 'Created' || state.chatRetry) {
    state.chatRetry = false;
    const roomName = chatRoomName(spec.subdomain, spec.projectId);
    state.resources.chatRoom.externalName = roomName;
    await runStep(
      tenant,
      'ensure-chat-room',
      'chatRoom',
      () => nonFatal.ensureChatRoom.executeWithOptions({ summary: `Create chat room ${roomName} (non-fatal)` }, [{ spec }]),
      (room) => {
        tenant.setResource('chatRoom', { externalName: room.room, synced: 'True', state: 'Created', message: '' });
        tenant.recordStep('ensure-chat-room', 'ok', `${room.room} ${room.created ? 'created' : room.restored ? 'restored' : 'exists'}`);
      },
    );
  }

  tenant.setSyncedFromResources(generation);
  const unready = unreadyResources(state.resources);
  if (!tenant.isReady) tenant.setReady('False', 'Creating', unreadyMessage(state.resources) || 'waiting for the tenant health probe');
  await tenant.mirror();

  // 8. readiness: probe through the route until healthy (up to the deadline while everything is in place)
  tenant.setCurrentStep('probe-health');
  const beforeDeadline = state.deadlineAt - Date.now();
  const windowMs = unready.length === 0 && beforeDeadline > 0 ? beforeDeadline : 0;
  const health = await reconcileStep.probeTenantHealth
    .executeWithOptions(
      {
        startToCloseTimeout: windowMs + 60_000,
        heartbeatTimeout: '30 seconds',
        retry: { maximumAttempts: 3 },
        summary: `GET /web/health with Host ${host}, then authenticate on ${database}`,
      },
      [{ host, tenant: name, database, windowMs, intervalMs: settings.probeIntervalMs }],
    )
    .catch((err) => ({ healthy: false, httpStatus: 0, detail: failureMessage(err), attempts: 0 }));

  if (health.healthy && unready.length === 0) {
    tenant.recordStep('probe-health', 'ok', health.detail);
    state.observedGeneration = generation;
    state.readyAt ??= nowIso();
    if (state.phase !== 'Cancelled') state.phase = 'Ready';
    tenant.setReady('True', 'Available', '');
    await tenant.mirror();
    // a tenant cancelled during this reconcile gets no event, hence no welcome e-mail; a
    // reactivation reconciles again and emits it then (patched: earlier runs emitted it anyway)
    const cancelledMeanwhile = tenant.isCancelled && patched('no-provisioned-event-when-cancelled');
    if (!state.provisionedEventId && !cancelledMeanwhile) {
      tenant.setCurrentStep('publish-provisioned-event');
      // must finish: the event leads to the welcome e-mail and the portal entry, however long the
      // events service is away (the pending activity shows its attempts and last failure)
      const published = await mustFinish.publishProvisionedEvent.executeWithOptions({ summary: `Emit client.provisioned for ${name}` }, [
        { tenant: name, generation, spec },
      ]);
      state.provisionedEventId = published.eventId;
      tenant.recordStep('publish-provisioned-event', 'ok', `${published.eventId}${published.duplicate ? ' (already on the stream)' : ''}`);
      tenant.touch();
    }
    tenant.setCurrentStep('ready');
    await tenant.mirror();
    return 'ready';
  }

  tenant.recordStep('probe-health', 'failed', health.detail);
  state.observedGeneration = generation;
  if (Date.now() >= state.deadlineAt) {
    const waitedFor = Math.round(settings.readyDeadlineMs / 1000);
    const message = [`not Ready ${waitedFor}s after the apply`, health.detail, unreadyMessage(state.resources), ...tenant.blockingErrors()]
      .filter(Boolean)
      .join('; ');
    tenant.setReady('False', 'Unavailable', message);
    if (state.phase !== 'Cancelled') state.phase = 'Unavailable';
  } else {
    tenant.setReady('False', 'Creating', [unreadyMessage(state.resources), health.detail].filter(Boolean).join('; '));
  }
  tenant.setCurrentStep('waiting-to-retry');
  await tenant.mirror();
  return 'not-ready';
}
