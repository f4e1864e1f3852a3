import { Option, type Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { outputOption, pattern, positiveInteger, tenantName } from '../arguments.js';

interface Restore {
  name: string;
  mode: 'copy' | 'in-place';
  sourceTenant: string;
  backupId: string;
  host: string;
  state: string;
  keep: boolean;
  expiresAt: string | null;
}

interface RestoreOptions {
  backup?: string;
  keepFor?: number;
  inPlace?: boolean;
  confirm?: string;
  output: string;
}

async function restoreInPlace(tenant: string, opts: RestoreOptions) {
  const started = await opsRequest<{ restore: Restore & { host: string }; workflowId: string; temporalUiUrl: string }>(
    'POST',
    `/api/ops/tenants/${encodeURIComponent(tenant)}/restore-in-place`,
    { backupId: opts.backup, confirm: opts.confirm },
    { 'params.name': '<tenant>', 'body.backupId': '--backup', 'body.confirm': '--confirm' },
  );
  if (opts.output === 'json') return console.log(JSON.stringify(started, null, 2));
  console.log(`In-place restore of tenant ${tenant} started: backup ${started.restore.backupId} → ${tenant}`);
  console.log(`  first:       a safety backup of ${tenant} as it is now (listed by \`backups ${tenant}\`)`);
  console.log(`  workflow id: ${started.workflowId}`);
  console.log(`  Temporal UI: ${started.temporalUiUrl}`);
  console.log(`  follow it:   npm run cli -- restores ${tenant}`);
}

async function restoreAsCopy(tenant: string, opts: RestoreOptions) {
  if (opts.confirm !== undefined) throw new Error('--confirm goes with --in-place.');
  const started = await opsRequest<{ restore: Restore; workflowId: string; temporalUiUrl: string }>(
    'POST',
    `/api/ops/tenants/${encodeURIComponent(tenant)}/restores`,
    { backupId: opts.backup, keepForMinutes: opts.keepFor },
    { 'params.name': '<tenant>', 'body.backupId': '--backup', 'body.keepForMinutes': '--keep-for' },
  );
  if (opts.output === 'json') return console.log(JSON.stringify(started, null, 2));
  console.log(`Restore of tenant ${tenant} started: backup ${started.restore.backupId} → ${started.restore.name}`);
  console.log(`  host:        ${started.restore.host} (routed once restored)`);
  console.log(`  workflow id: ${started.workflowId}`);
  console.log(`  Temporal UI: ${started.temporalUiUrl}`);
  console.log(`  keep it:     npm run cli -- restore-keep ${started.restore.name}`);
}

function registerRestore(program: Command) {
  program
    .command('restore')
    .description(
      "restore a tenant's backup (default: its latest) as a new, separate tenant (a staging copy), or with --in-place into the tenant itself",
    )
    .argument(
      '<tenant>',
      'tenant name (= subdomain); a deprovisioned tenant works too, within its retention',
      tenantName,
    )
    .option(
      '--backup <id>',
      'the backup to restore, as listed by `backups <tenant>` (e.g. acme/20261126T101500000Z)',
      pattern(/^[a-z0-9-]{1,30}\/[0-9A-Za-z]{1,40}$/, 'It must be a backup id such as acme/20261126T101500000Z.'),
    )
    .addOption(
      new Option('--keep-for <minutes>', 'tear the copy down after this many minutes (default: RESTORE_KEEP_FOR)')
        .argParser(positiveInteger)
        .conflicts('inPlace'),
    )
    .option(
      '--in-place',
      'restore into the tenant itself, replacing its database and filestore (a safety backup of them is taken first); only for a cancelled tenant unless --confirm',
    )
    .addOption(
      new Option(
        '--confirm <tenant>',
        "with --in-place: the tenant's name, to replace the data of a tenant not cancelled",
      ),
    )
    .addOption(outputOption(['text', 'json']))
    .action((tenant: string, opts: RestoreOptions) =>
      opts.inPlace ? restoreInPlace(tenant, opts) : restoreAsCopy(tenant, opts),
    );
}

function registerRestoreKeep(program: Command) {
  program
    .command('restore-keep')
    .description('keep a restored copy: it is not torn down when its time is up')
    .argument('<name>', 'the restored copy (as `restore` printed it)', tenantName)
    .addOption(outputOption(['text', 'json']))
    .action(async (name: string, opts: { output: string }) => {
      const kept = await opsRequest<Restore>('POST', `/api/ops/restores/${encodeURIComponent(name)}/keep`, undefined, {
        'params.name': '<name>',
      });
      if (opts.output === 'json') return console.log(JSON.stringify(kept, null, 2));
      console.log(`Restore ${kept.name} (backup ${kept.backupId} of ${kept.sourceTenant}) is kept: ${kept.state}.`);
    });
}

function registerRestores(program: Command) {
  program
    .command('restores')
    .description("a tenant's restores (copies and in place), newest first")
    .argument('<tenant>', 'tenant name (= subdomain)', tenantName)
    .addOption(outputOption(['text', 'json']))
    .action(async (tenant: string, opts: { output: string }) => {
      const { items } = await opsRequest<{
        items: (Restore & { safetyBackupId: string | null; error: string | null })[];
      }>('GET', `/api/ops/tenants/${encodeURIComponent(tenant)}/restores`, undefined, { 'params.name': '<tenant>' });
      if (opts.output === 'json') return console.log(JSON.stringify(items, null, 2));
      if (!items.length) return console.log(`Tenant ${tenant} has not been restored.`);
      for (const r of items)
        console.log(
          [
            `${r.name}  ${r.mode}  ${r.state}  backup ${r.backupId}`,
            r.safetyBackupId ? `  safety backup ${r.safetyBackupId}` : '',
            r.error ? `  error: ${r.error}` : '',
          ].join(''),
        );
    });
}

function registerDrills(program: Command) {
  program
    .command('drills')
    .description("a tenant's backup drills, newest first: the last drill, its outcome and duration")
    .argument('<tenant>', 'tenant name (= subdomain)', tenantName)
    .addOption(outputOption(['text', 'json']))
    .action(async (tenant: string, opts: { output: string }) => {
      const { items } = await opsRequest<{
        items: {
          backupId: string | null;
          outcome: string;
          mismatches: string[];
          error: string | null;
          durationMs: number;
          finishedAt: string;
        }[];
      }>('GET', `/api/ops/tenants/${encodeURIComponent(tenant)}/drills`, undefined, { 'params.name': '<tenant>' });
      if (opts.output === 'json') return console.log(JSON.stringify(items, null, 2));
      if (!items.length) return console.log(`Tenant ${tenant} has not been drilled yet.`);
      for (const d of items) {
        console.log(
          `${d.finishedAt}  ${d.outcome}  ${(d.durationMs / 1000).toFixed(1)} s  backup ${d.backupId ?? '(none)'}`,
        );
        for (const line of [...(d.error ? [d.error] : []), ...d.mismatches]) console.log(`    ${line}`);
      }
    });
}

function registerBackups(program: Command) {
  program
    .command('backups')
    .description("a tenant's stored backups within retention, newest first")
    .argument('<tenant>', 'tenant name (= subdomain)', tenantName)
    .addOption(outputOption(['text', 'json']))
    .action(async (tenant: string, opts: { output: string }) => {
      const { items } = await opsRequest<{
        items: {
          backupId: string;
          createdAt: string;
          expiresAt: string;
          database: { sizeBytes: number };
          filestore: { sizeBytes: number };
        }[];
      }>('GET', `/api/ops/tenants/${encodeURIComponent(tenant)}/backups`, undefined, { 'params.name': '<tenant>' });
      if (opts.output === 'json') return console.log(JSON.stringify(items, null, 2));
      if (!items.length) return console.log(`Tenant ${tenant} has no backup within its retention.`);
      for (const b of items)
        console.log(
          `${b.backupId}  taken ${b.createdAt}  kept until ${b.expiresAt}  database ${b.database.sizeBytes} B, filestore ${b.filestore.sizeBytes} B`,
        );
    });
}

function registerBackup(program: Command) {
  program
    .command('backup')
    .description(
      'back a tenant up now, as its backup schedule does (workflow backup:<tenant>:manual-<time>); `backups <tenant>` lists it once stored',
    )
    .argument('<tenant>', 'tenant name (= subdomain)', tenantName)
    .addOption(outputOption(['text', 'json']))
    .action(async (tenant: string, opts: { output: string }) => {
      const started = await opsRequest<{ workflowId: string; scheduleId: string; temporalUiUrl: string }>(
        'POST',
        `/api/ops/tenants/${encodeURIComponent(tenant)}/backups`,
        undefined,
        { 'params.name': '<tenant>' },
      );
      if (opts.output === 'json') return console.log(JSON.stringify(started, null, 2));
      console.log(`Backup of tenant ${tenant} started (the action of schedule ${started.scheduleId}, now).`);
      console.log(`  workflow id: ${started.workflowId}`);
      console.log(`  Temporal UI: ${started.temporalUiUrl}`);
      console.log(`  follow it:   npm run cli -- backups ${tenant}   (listed once stored)`);
    });
}

/** The backup and restore commands: backup (now), restore (as a copy or in place), restore-keep, restores, drills, backups. */
export function register(program: Command) {
  registerBackup(program);
  registerRestore(program);
  registerRestoreKeep(program);
  registerRestores(program);
  registerDrills(program);
  registerBackups(program);
}
