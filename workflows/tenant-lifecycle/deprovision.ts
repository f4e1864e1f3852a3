/**
 * Deprovisioning (§3.2), after the soak period or a delete after the cancel: a last backup, then
 * the route removed, the database dropped, the filestore folder wiped, the backup schedule deleted
 * and the chat room archived (inactive). Stored backups stay for their tier's retention.
 *
 * Each teardown step must finish: it is retried without limit while a peer is away (a `DROP
 * DATABASE` refused for a while, PostgreSQL restarting). Only a business failure (a non-retryable
 * one, e.g. a name that cannot be a database or a folder) comes back: it is recorded on the
 * resource, the other steps still run, and the tenant ends Deprovisioned with Synced=False naming
 * what was left behind, so a half-made tenant is deprovisioned to nothing it did create.
 */
import { chatRoomName } from '../../domain/tenants/chat-room.js';
import { backupScheduleId, type ResourceKind } from '../../domain/tenants/types.js';
import type { LifecycleActivities } from './activities.js';
import { failureMessage } from './reconcile.js';
import { nowIso, type TenantState } from './state.js';

export async function deprovision(tenant: TenantState, { reconcileStep, mustFinish, nonFatal }: LifecycleActivities): Promise<void> {
  const state = tenant.state;
  const { spec, name } = state;
  const database = state.hostname || state.resources.database.externalName;
  state.phase = 'Deprovisioning';
  tenant.setReady('False', 'Deleting', 'Deprovisioning: route, database, filestore, backup schedule; the chat room is archived');
  await tenant.mirror();

  /** Runs one must-finish step; a business failure is kept on the resource and the next step runs. */
  const teardown = async <T>(step: string, kind: ResourceKind, run: () => Promise<T>, onDone: (result: T) => void) => {
    tenant.setCurrentStep(step);
    try {
      onDone(await run());
    } catch (err) {
      const message = failureMessage(err);
      tenant.setResourceFailed(kind, `left behind: ${message}`);
      tenant.recordStep(step, 'failed', message);
    }
    await tenant.mirror();
  };

  // a last backup, kept with the others for the tier's retention
  if (state.resources.database.state === 'Created') {
    tenant.setCurrentStep('final-backup');
    try {
      const backup = await reconcileStep.createTenantBackup.executeWithOptions(
        { startToCloseTimeout: '10 minutes', summary: `Final backup of ${name} before deprovisioning` },
        [{ tenant: name, tier: spec.tier, database, stamp: `${nowIso()}-final` }],
      );
      tenant.recordStep('final-backup', 'ok', backup.files.map((f) => f.path).join(', '));
    } catch (err) {
      // the scheduled backups are still there; a failed last one does not keep the tenant alive
      tenant.recordStep('final-backup', 'failed', failureMessage(err));
    }
    await tenant.mirror();
  }
  await teardown(
    'remove-route',
    'route',
    () => mustFinish.removeRoute.executeWithOptions({ summary: `Remove the route of ${name}` }, [{ tenant: name }]),
    (removed) => {
      tenant.setResourceDeleted('route', `route ${removed.outcome}`);
      tenant.recordStep('remove-route', 'ok', removed.outcome);
    },
  );
  await teardown(
    'drop-database',
    'database',
    () => mustFinish.dropTenantDatabase.executeWithOptions({ summary: `DROP DATABASE "${database}"` }, [{ database }]),
    (dropped) => {
      tenant.setResourceDeleted('database', `database ${dropped.outcome}`);
      tenant.setResourceDeleted('apiUser', 'removed with the database');
      tenant.recordStep('drop-database', 'ok', `${database} ${dropped.outcome}`);
    },
  );
  await teardown(
    'wipe-filestore',
    'filestore',
    () => mustFinish.wipeFilestore.executeWithOptions({ summary: `Wipe the filestore folder of ${name}` }, [{ tenant: name }]),
    (wiped) => {
      tenant.setResourceDeleted('filestore', wiped.wiped ? 'wiped' : 'was already gone');
      tenant.recordStep('wipe-filestore', 'ok', wiped.path);
    },
  );
  await teardown(
    'delete-backup-schedule',
    'backupSchedule',
    () =>
      mustFinish.deleteBackupSchedule.executeWithOptions({ summary: `Delete schedule ${backupScheduleId(name)} (stored backups stay)` }, [
        { tenant: name },
      ]),
    (deleted) => {
      tenant.setResourceDeleted('backupSchedule', `schedule ${deleted.outcome}; stored backups kept for the ${spec.tier} retention`);
      tenant.recordStep('delete-backup-schedule', 'ok', deleted.outcome);
    },
  );
  tenant.setCurrentStep('archive-chat-room');
  try {
    const archived = await nonFatal.archiveChatRoom.executeWithOptions(
      { summary: `Archive chat room ${chatRoomName(spec.subdomain, spec.projectId)} (inactive)` },
      [{ spec }],
    );
    tenant.setResource('chatRoom', { externalName: archived.room, synced: 'True', state: 'Archived', message: `room ${archived.outcome} (inactive)` });
    tenant.recordStep('archive-chat-room', 'ok', archived.outcome);
  } catch (err) {
    // non-fatal like its creation: recorded, the tenant is deprovisioned regardless
    const message = failureMessage(err);
    tenant.setResourceFailed('chatRoom', message);
    tenant.recordStep('archive-chat-room', 'failed', message);
  }

  state.phase = 'Deprovisioned';
  state.deprovisionedAt = nowIso();
  const leftBehind = tenant.blockingErrors();
  tenant.setSynced(leftBehind.length ? 'False' : 'True', leftBehind.join('; '), state.generation);
  tenant.setReady('False', 'Deleting', `Deprovisioned at ${state.deprovisionedAt}; stored backups are kept for the ${spec.tier} tier's retention`);
  tenant.setCurrentStep('deprovisioned');
  await tenant.mirror();
}
