/**
 * Deprovisioning (§3.2), after the soak period or a delete after the cancel: a last backup, then
 * the route removed, the database dropped, the filestore folder wiped, the backup schedule deleted,
 * the ERP's OIDC client removed and the chat room archived (inactive). Stored backups stay for their tier's retention.
 *
 * Each teardown step must finish: it is retried without limit while a peer is away (a `DROP
 * DATABASE` refused for a while, PostgreSQL restarting). Only a business failure (a non-retryable
 * one, e.g. a name that cannot be a database or a folder) comes back: it is recorded on the
 * resource, the other steps still run, and the tenant ends Deprovisioned with Synced=False naming
 * what was left behind, so a half-made tenant is deprovisioned to nothing it did create.
 */
import { chatRoomName } from '../../domain/tenants/chat-room.js';
import { backupScheduleId, type TenantClientSpec } from '../../domain/tenants/types.js';
import { failureMessage } from '../shared/activity-failures.js';
import type { LifecycleActivities } from './activities.js';
import { resourceStep, runResourceStep, type ResourceStep } from './resource-step.js';
import { nowIso, type TenantState } from './state.js';

/** What the teardown steps work on. */
interface TeardownContext {
  tenant: TenantState;
  activities: LifecycleActivities;
  name: string;
  spec: TenantClientSpec;
  database: string;
}

/** A row of the table, its result's type taken from its activity call. */
const teardownStep = <Result>(step: ResourceStep<TeardownContext, Result>) => resourceStep(step);

/** The must-finish teardown steps, in order: each removes one resource. */
const teardownSteps = [
  teardownStep({
    name: 'remove-route',
    resource: 'route',
    ensures: 'no route to the tenant',
    call: ({ activities, name }) =>
      activities.mustFinish.removeRoute.executeWithOptions({ summary: `Remove the route of ${name}` }, [
        { tenant: name },
      ]),
    record: ({ tenant }, removed) => {
      tenant.setResourceDeleted('route', `route ${removed.outcome}`);
      tenant.recordStep('remove-route', 'ok', removed.outcome);
    },
  }),
  teardownStep({
    name: 'drop-database',
    resource: 'database',
    ensures: 'no tenant database (and so no ERP API user)',
    call: ({ activities, database }) =>
      activities.mustFinish.dropTenantDatabase.executeWithOptions({ summary: `DROP DATABASE "${database}"` }, [
        { database },
      ]),
    record: ({ tenant, database }, dropped) => {
      tenant.setResourceDeleted('database', `database ${dropped.outcome}`);
      tenant.setResourceDeleted('apiUser', 'removed with the database');
      tenant.recordStep('drop-database', 'ok', `${database} ${dropped.outcome}`);
    },
  }),
  teardownStep({
    name: 'wipe-filestore',
    resource: 'filestore',
    ensures: 'no filestore folder',
    call: ({ activities, name }) =>
      activities.mustFinish.wipeFilestore.executeWithOptions({ summary: `Wipe the filestore folder of ${name}` }, [
        { tenant: name },
      ]),
    record: ({ tenant }, wiped) => {
      tenant.setResourceDeleted('filestore', wiped.wiped ? 'wiped' : 'was already gone');
      tenant.recordStep('wipe-filestore', 'ok', wiped.path);
    },
  }),
  teardownStep({
    name: 'delete-backup-schedule',
    resource: 'backupSchedule',
    ensures: 'no backup schedule (the stored backups stay for the tier retention)',
    call: ({ activities, name }) =>
      activities.mustFinish.deleteBackupSchedule.executeWithOptions(
        { summary: `Delete schedule ${backupScheduleId(name)} (stored backups stay)` },
        [{ tenant: name }],
      ),
    record: ({ tenant, spec }, deleted) => {
      tenant.setResourceDeleted(
        'backupSchedule',
        `schedule ${deleted.outcome}; stored backups kept for the ${spec.tier} retention`,
      );
      tenant.recordStep('delete-backup-schedule', 'ok', deleted.outcome);
    },
  }),
  teardownStep({
    name: 'remove-erp-sign-in',
    resource: 'erpSignIn',
    ensures: "no OIDC client of the tenant's ERP at the platform's provider",
    call: ({ activities, name }) =>
      activities.mustFinish.removeErpSignIn.executeWithOptions({ summary: `Remove the OIDC client of ${name}'s ERP` }, [
        { tenant: name },
      ]),
    record: ({ tenant }, removed) => {
      tenant.setResourceDeleted('erpSignIn', removed.removed ? 'client removed' : 'there was no client');
      tenant.recordStep('remove-erp-sign-in', 'ok', removed.removed ? 'removed' : 'absent');
    },
  }),
];

export async function deprovision(tenant: TenantState, activities: LifecycleActivities): Promise<void> {
  const state = tenant.state;
  const { spec, name } = state;
  const context: TeardownContext = {
    tenant,
    activities,
    name,
    spec,
    database: state.hostname || state.resources.database.externalName,
  };
  state.phase = 'Deprovisioning';
  tenant.setReady(
    'False',
    'Deleting',
    'Deprovisioning: route, database, filestore, backup schedule; the chat room is archived',
  );

  if (state.resources.database.state === 'Created') await finalBackup(context);
  for (const step of teardownSteps) {
    // a business failure is kept on the resource and the next step runs
    await runResourceStep(tenant, context, step, (err) => {
      const message = failureMessage(err);
      tenant.setResourceFailed(step.resource, `left behind: ${message}`);
      tenant.recordStep(step.name, 'failed', message);
    });
  }
  await archiveChatRoom(context);
  await finishDeprovisioning(context);
}

/** A last backup, kept with the others for the tier's retention. */
async function finalBackup({ tenant, activities, name, spec, database }: TeardownContext): Promise<void> {
  tenant.setCurrentStep('final-backup');
  await tenant.publish();
  try {
    const backup = await activities.reconcileStep.createTenantBackup.executeWithOptions(
      { startToCloseTimeout: '10 minutes', summary: `Final backup of ${name} before deprovisioning` },
      [{ tenant: name, tier: spec.tier, database, stamp: `${nowIso()}-final` }],
    );
    tenant.recordStep('final-backup', 'ok', backup.files.map((f) => f.path).join(', '));
  } catch (err) {
    // the scheduled backups are still there; a failed last one does not keep the tenant alive
    tenant.recordStep('final-backup', 'failed', failureMessage(err));
  }
}

/** The chat room archived (inactive), non-fatal like its creation: a failure is recorded, the tenant is deprovisioned regardless. */
async function archiveChatRoom({ tenant, activities, spec }: TeardownContext): Promise<void> {
  tenant.setCurrentStep('archive-chat-room');
  await tenant.publish();
  try {
    const archived = await activities.nonFatal.archiveChatRoom.executeWithOptions(
      { summary: `Archive chat room ${chatRoomName(spec.subdomain, spec.projectId)} (inactive)` },
      [{ spec }],
    );
    tenant.setResource('chatRoom', {
      externalName: archived.room,
      synced: 'True',
      state: 'Archived',
      message: `room ${archived.outcome} (inactive)`,
    });
    tenant.recordStep('archive-chat-room', 'ok', archived.outcome);
  } catch (err) {
    const message = failureMessage(err);
    tenant.setResourceFailed('chatRoom', message);
    tenant.recordStep('archive-chat-room', 'failed', message);
  }
}

/** Deprovisioned: Synced=False names what was left behind; the status is published. */
async function finishDeprovisioning({ tenant, spec }: TeardownContext): Promise<void> {
  const state = tenant.state;
  state.phase = 'Deprovisioned';
  state.deprovisionedAt = nowIso();
  const leftBehind = tenant.blockingErrors();
  tenant.setSynced(leftBehind.length ? 'False' : 'True', leftBehind.join('; '), state.generation);
  tenant.setReady(
    'False',
    'Deleting',
    `Deprovisioned at ${state.deprovisionedAt}; stored backups are kept for the ${spec.tier} tier's retention`,
  );
  tenant.setCurrentStep('deprovisioned');
  await tenant.publish();
}
