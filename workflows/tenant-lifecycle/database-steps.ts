/**
 * The reconcile steps on the tenant database (reconcile-steps.ts runs them): cloned from the
 * template of tier × version, or, when that template is missing, installed from scratch by the ERP.
 */
import { reconcileStep, type ReconcileStepContext } from './reconcile-step-context.js';

export const cloneDatabase = reconcileStep({
  name: 'clone-database',
  resource: 'database',
  ensures: 'the tenant database, cloned from the template of tier × version',
  call: ({ activities, database, spec }) =>
    activities.reconcileStep.cloneTenantDatabase.executeWithOptions(
      {
        startToCloseTimeout: '5 minutes',
        summary: `CREATE DATABASE "${database}" from the ${spec.tier}/${spec.erpVersion} template`,
      },
      [{ database, spec }],
    ),
  record: (context, db) => {
    const { tenant, database } = context;
    // no template: the tier's modules are installed from scratch (the next steps)
    if (db.outcome === 'template-missing') {
      context.missingTemplate = db.template;
      recordInstallPending(context, db.template);
      return;
    }
    // an existing database keeps saying where it came from (after a tier change it is not this tier's template)
    const previous = tenant.state.resources.database;
    const message =
      db.outcome === 'created' || previous.state !== 'Created' || !madeFromTemplateOrScratch(previous.message)
        ? `cloned from ${db.template}`
        : previous.message;
    tenant.setResource('database', { externalName: database, synced: 'True', state: 'Created', message });
    tenant.recordStep('clone-database', 'ok', db.outcome === 'created' ? `created from ${db.template}` : 'exists');
  },
});

const INSTALLED_FROM_SCRATCH = 'installed from scratch';

/** Where an existing database came from, as its resource says: a template, or an install from scratch. */
const madeFromTemplateOrScratch = (message: string) =>
  message.startsWith('cloned from') || message.startsWith(INSTALLED_FROM_SCRATCH);

const installingMessage = ({ spec }: ReconcileStepContext, template: string) =>
  `installing the ${spec.tier} module set from scratch (template database "${template}" does not exist)`;

/**
 * The template is missing: the database is pending until the install (the next steps) has made it,
 * and Ready says so (the route is made before the install, so /web/health answers 503 meanwhile).
 */
function recordInstallPending(context: ReconcileStepContext, template: string): void {
  const { tenant, database } = context;
  const message = installingMessage(context, template);
  tenant.setResource('database', { externalName: database, synced: 'False', state: 'Pending', message });
  tenant.setReady('False', 'Creating', `database: ${message}; /web/health answers 503 until it is done`);
  tenant.recordStep(
    'clone-database',
    'skipped',
    `template database "${template}" does not exist: installing from scratch`,
  );
}

/**
 * The template is missing: the ERP installs the tier's modules into the new database itself
 * (domain/erp/from-scratch.ts), minutes on real Odoo. Its route is made first, so the tenant's
 * /web/health answers 503 meanwhile (the route is up, its database is not); Ready says why. The
 * readiness deadline counts from the last progress: a finished install starts it again.
 */
export const installFromScratch = reconcileStep({
  name: 'install-database',
  resource: 'database',
  ensures: "the tenant database, with the tier's modules installed from scratch by the ERP (no template to clone)",
  call: ({ activities, database, spec, missingTemplate }) =>
    activities.install.installTenantDatabase.executeWithOptions(
      { summary: `Install the ${spec.tier} modules into ${database} from scratch (no template ${missingTemplate})` },
      [{ database, spec }],
    ),
  record: ({ tenant, database, readyDeadlineMs }, db) => {
    const message = `${INSTALLED_FROM_SCRATCH} (template ${db.missingTemplate} was missing)`;
    tenant.setResource('database', { externalName: database, synced: 'True', state: 'Created', message });
    tenant.state.deadlineAt = Math.max(tenant.state.deadlineAt, Date.now() + readyDeadlineMs);
    const done = db.outcome === 'installed' ? `installed in ${Math.round(db.installMs / 1000)}s` : 'exists';
    const parts = [db.attempt > 1 ? `${done} (attempt ${db.attempt})` : done];
    if (db.template) parts.push(`template ${db.template.name} made from it in ${db.template.ms} ms`);
    tenant.recordStep('install-database', 'ok', parts.join('; '));
  },
});
