/**
 * The reconcile steps after the subdomain's reservation, as a table: each names its step, the
 * resource it ensures, its activity call (options included) and how its result sets the
 * resource's state (hence the Synced condition, reconcile.ts). `reconcileSteps` says which run and
 * in which order; the runner is `reconcile`.
 */
import { chatRoomName } from '../../domain/tenants/chat-room.js';
import { backupScheduleId } from '../../domain/tenants/types.js';
import { cloneDatabase, installFromScratch } from './database-steps.js';
import { reconcileStep, type ReconcileStep, type ReconcileStepContext } from './reconcile-step-context.js';
import type { TenantState } from './state.js';

export type { ReconcileStepContext } from './reconcile-step-context.js';

const ensureApiUser = reconcileStep({
  name: 'ensure-api-user',
  resource: 'apiUser',
  ensures: "the tenant's dedicated ERP API user (made through the ERP, so through the route; needs the database)",
  call: ({ activities, name, database }) =>
    activities.reconcileStep.ensureErpApiUser.executeWithOptions(
      { summary: `Ensure the ERP API user of ${database}` },
      [{ tenant: name, database }],
    ),
  record: ({ tenant }, apiUser) => {
    if (apiUser.outcome === 'database-missing') {
      tenant.setResource('apiUser', {
        externalName: '',
        synced: 'False',
        state: 'Pending',
        message: 'waiting for the database',
      });
      tenant.recordStep('ensure-api-user', 'skipped', 'waiting for the database');
    } else {
      tenant.setResource('apiUser', { externalName: apiUser.login, synced: 'True', state: 'Created', message: '' });
      tenant.recordStep('ensure-api-user', 'ok', `${apiUser.login} ${apiUser.outcome}`);
    }
  },
});

const createRoute = reconcileStep({
  name: 'create-route',
  quick: true,
  resource: 'route',
  ensures: 'the route host → database, in namespace plana-odoo-<erpVersion>',
  call: ({ activities, host, name, namespace, database }) =>
    activities.quickStep.createRoute.executeWithOptions({ summary: `Route ${host} in ${namespace}` }, [
      { host, tenant: name, namespace, database },
    ]),
  record: ({ tenant, host, namespace, database }, route) => {
    tenant.setResource('route', {
      externalName: `${namespace}/${host}`,
      synced: 'True',
      state: 'Created',
      message: '',
    });
    tenant.recordStep('create-route', 'ok', `${host} → ${database} (${route.outcome})`);
  },
});

/**
 * DESIGN §5: a tier change installs the new tier's modules; a downgrade keeps what is installed.
 * Kept on the database resource: until the modules are in, the database is not what the spec asks for.
 */
const ensureTierModules = reconcileStep({
  name: 'ensure-tier-modules',
  resource: 'database',
  ensures: "the tier's ERP modules installed in the tenant database",
  call: ({ activities, name, database, spec }) =>
    activities.reconcileStep.ensureTierModules.executeWithOptions(
      { startToCloseTimeout: '10 minutes', summary: `Install the ${spec.tier} tier's ERP modules in ${database}` },
      [{ tenant: name, database, tier: spec.tier }],
    ),
  record: ({ tenant, spec }, modules) => {
    if (modules.outcome === 'database-missing') {
      tenant.recordStep('ensure-tier-modules', 'skipped', 'waiting for the database');
      return;
    }
    const parts = [
      modules.installed.length
        ? `${spec.tier} modules installed: ${modules.installed.join(', ')}`
        : `${spec.tier} modules present (${modules.present})`,
    ];
    if (modules.kept.length)
      parts.push(`kept from a higher tier (a downgrade uninstalls nothing): ${modules.kept.join(', ')}`);
    if (modules.unavailable.length) parts.push(`not available on this ERP: ${modules.unavailable.join(', ')}`);
    if (modules.eventRules) parts.push(modules.eventRules);
    tenant.recordStep('ensure-tier-modules', 'ok', parts.join('; '));
  },
});

const createFilestore = reconcileStep({
  name: 'create-filestore',
  quick: true,
  resource: 'filestore',
  ensures: "the tenant's filestore folder",
  call: ({ activities, name }) =>
    activities.quickStep.createFilestore.executeWithOptions({ summary: `Create the filestore folder of ${name}` }, [
      { tenant: name },
    ]),
  record: ({ tenant }, filestore) => {
    tenant.setResource('filestore', { externalName: filestore.path, synced: 'True', state: 'Created', message: '' });
    tenant.recordStep('create-filestore', 'ok', `${filestore.path} ${filestore.created ? 'created' : 'exists'}`);
  },
});

const createBackupSchedule = reconcileStep({
  name: 'create-backup-schedule',
  quick: true,
  resource: 'backupSchedule',
  ensures: "the tenant's backup schedule, at its tier's frequency",
  call: ({ activities, name, spec, database }) =>
    activities.quickStep.createBackupSchedule.executeWithOptions({ summary: `Schedule ${backupScheduleId(name)}` }, [
      { tenant: name, tier: spec.tier, database },
    ]),
  record: ({ tenant }, schedule) => {
    tenant.setResource('backupSchedule', {
      externalName: schedule.scheduleId,
      synced: 'True',
      state: 'Created',
      message: '',
    });
    tenant.recordStep('create-backup-schedule', 'ok', `${schedule.scheduleId} ${schedule.outcome}`);
  },
});

/** Non-fatal: a failure stays on the resource (Synced stays True, Ready does not wait); the next reconcile tries again. */
const ensureErpSignIn = reconcileStep({
  name: 'ensure-erp-sign-in',
  resource: 'erpSignIn',
  ensures:
    "the ERP signs in through the platform's OpenID provider: its client, the ERP's provider, the members' ERP users",
  call: ({ activities, name, database, host }) =>
    activities.nonFatal.ensureErpSignIn.executeWithOptions(
      {
        summary: `OIDC client of ${name}'s ERP, its sign-in module, provider and members' users (non-fatal)`,
        // the module's install when it is missing takes minutes on real Odoo
        startToCloseTimeout: '10 minutes',
      },
      [{ tenant: name, database, host }],
    ),
  record: ({ tenant }, signIn) => {
    const installed = signIn.moduleInstalled ? 'sign-in module installed; ' : '';
    const scope = signIn.replacedScope ? `sign-up scope b2b (was ${signIn.replacedScope}); ` : '';
    const users = `${installed}${scope}users ${signIn.created} created, ${signIn.updated} kept, ${signIn.archived} archived`;
    tenant.setResource('erpSignIn', {
      externalName: signIn.clientId,
      synced: 'True',
      state: 'Created',
      message: `redirect URI ${signIn.redirectUri}`,
    });
    tenant.recordStep('ensure-erp-sign-in', 'ok', `${signIn.clientId}; ${users}`);
  },
});

/** Non-fatal: a failure stays on the room (Synced stays True); retry-chat-room tries again. */
const ensureChatRoom = reconcileStep({
  name: 'ensure-chat-room',
  quick: true,
  resource: 'chatRoom',
  ensures: "the tenant's support chat room",
  call: ({ tenant, activities, spec }) => {
    tenant.state.chatRetry = false;
    const roomName = chatRoomName(spec.subdomain, spec.projectId);
    tenant.state.resources.chatRoom.externalName = roomName;
    return activities.quickNonFatal.ensureChatRoom.executeWithOptions(
      { summary: `Create chat room ${roomName} (non-fatal)` },
      [{ spec }],
    );
  },
  record: ({ tenant }, room) => {
    tenant.setResource('chatRoom', { externalName: room.room, synced: 'True', state: 'Created', message: '' });
    tenant.recordStep(
      'ensure-chat-room',
      'ok',
      `${room.room} ${room.created ? 'created' : room.restored ? 'restored' : 'exists'}`,
    );
  },
});

/**
 * The steps of one reconcile, in order. Lazy: each decision (a missing template, the chat room's
 * state) is taken when the step before it has run.
 */
export function* reconcileSteps(tenant: TenantState, context: ReconcileStepContext): Generator<ReconcileStep> {
  yield cloneDatabase;
  // the API user is made over XML-RPC as the tenant's admin, through the tenant's route: the route
  // comes first; with no template (the host answers 503 meanwhile) the database is installed between them
  if (context.missingTemplate) yield* [createRoute, installFromScratch, ensureApiUser];
  else yield* [createRoute, ensureApiUser];
  yield ensureTierModules;
  yield createFilestore;
  yield createBackupSchedule;
  yield ensureErpSignIn;
  const chatRoom = tenant.state.resources.chatRoom;
  if (chatRoom.state !== 'Created' || tenant.state.chatRetry) yield ensureChatRoom;
}
