/**
 * Backups and restores for operators (ops service key): a tenant's stored backups, a backup taken
 * now, a backup (or the latest) restored as a new tenant, the restored copies (kept on request, otherwise torn down), and
 * the backup drills' results.
 */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { keepRestore, startRestore, startRestoreInPlace } from '../../../domain/tenants/restore-start.js';
import { listBackups } from '../../../domain/tenants/backup-catalog.js';
import { startBackupNow } from '../../../domain/tenants/backup-start.js';
import { getRestore, listRestores } from '../../../domain/tenants/restore-records.js';
import { listDrills } from '../../../domain/tenants/backup-drills.js';
import { AppError } from '../../../lib/errors.js';
import { temporalUiLink } from '../../../lib/temporal.js';
import { restoreWorkflowId } from '../../../domain/tenants/restore-workflow-contract.js';
import { TenantName, problemRef } from '../../schemas/common.js';
import { access } from '../../plugins/access.js';

const BackupId = Type.String({
  pattern: '^[a-z0-9-]{1,30}/[0-9A-Za-z]{1,40}$',
  maxLength: 71,
  title: 'a backup id as listed by GET /api/ops/tenants/{name}/backups (e.g. acme/20261126T101500000Z)',
  description: 'The backup to restore (default: the latest within retention)',
});

const BackupObject = Type.Object({ key: Type.String(), sha256: Type.String(), sizeBytes: Type.Integer() });
const Backup = Type.Object({
  backupId: Type.String(),
  tenant: Type.String(),
  tier: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.String({ format: 'date-time' }),
  database: BackupObject,
  filestore: BackupObject,
});
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Restore = Type.Object({
  name: Type.String({
    description: 'The restored copy, a tenant of its own; in place, the staging name the backup was restored under',
  }),
  mode: Type.Union([Type.Literal('copy'), Type.Literal('in-place')]),
  sourceTenant: Type.String(),
  backupId: Type.String({ description: 'The backup the copy (or the tenant, in place) came from' }),
  safetyBackupId: Nullable(
    Type.String({ description: 'In place: the backup taken of what the restore replaced, once taken' }),
  ),
  host: Type.String(),
  state: Type.Union([
    Type.Literal('restoring'),
    Type.Literal('ready'),
    Type.Literal('failed'),
    Type.Literal('torn-down'),
  ]),
  keep: Type.Boolean(),
  expiresAt: Nullable(Type.String({ format: 'date-time' })),
  error: Nullable(Type.String()),
  requestedAt: Type.String({ format: 'date-time' }),
  restoredAt: Nullable(Type.String({ format: 'date-time' })),
  tornDownAt: Nullable(Type.String({ format: 'date-time' })),
});
const Drill = Type.Object({
  tenant: Type.String(),
  backupId: Nullable(Type.String()),
  outcome: Type.Union([Type.Literal('passed'), Type.Literal('mismatch'), Type.Literal('failed')]),
  mismatches: Type.Array(Type.String()),
  error: Nullable(Type.String()),
  durationMs: Type.Integer(),
  finishedAt: Type.String({ format: 'date-time' }),
});
const StartedRestore = Type.Object({
  restore: Restore,
  workflowId: Type.String(),
  temporalUiUrl: Type.String(),
});

/** What a restore needs of the API's dependencies. */
function restoreDeps(fastify: FastifyInstance) {
  return {
    pool: fastify.deps.pool,
    temporal: fastify.deps.temporal,
    taskQueue: fastify.deps.config.TEMPORAL_TASK_QUEUE,
    tenantDomain: fastify.deps.config.TENANT_DOMAIN,
  };
}

/** A tenant's stored backups. */
function listBackupsRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/ops/tenants/:name/backups',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: "A tenant's stored backups within retention, newest first (a deprovisioned tenant's too)",
        params: Type.Object({ name: TenantName }),
        response: { 200: Type.Object({ items: Type.Array(Backup) }), 401: problemRef },
      },
    },
    async (req) => ({ items: await listBackups(app.deps.pool, req.params.name) }),
  );
}

/** Take a backup of a tenant now, as its schedule does. */
function startBackupRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/api/ops/tenants/:name/backups',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary:
          "Back the tenant up now: its backup schedule's action (workflow backupTenant) started at once as backup:<tenant>:manual-<time>; listed under GET …/backups once stored. 404 for an unknown tenant, 409 for one without a backup schedule (provisioning, deprovisioned)",
        params: Type.Object({ name: TenantName }),
        response: {
          202: Type.Object({
            tenant: Type.String(),
            workflowId: Type.String(),
            runId: Type.String(),
            scheduleId: Type.String({ description: 'The schedule whose action was started; its own runs go on' }),
            temporalUiUrl: Type.String(),
          }),
          401: problemRef,
          404: problemRef,
          409: problemRef,
        },
      },
    },
    async (req, reply) => {
      const started = await startBackupNow(app.deps, req.params.name);
      req.log.info({ tenant: started.tenant, workflowId: started.workflowId }, 'backup started');
      return reply.code(202).send({ ...started, temporalUiUrl: temporalUiLink(app.deps.config, started.workflowId) });
    },
  );
}

/** Start a restore of a tenant's backup as a new tenant. */
function startRestoreRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/api/ops/tenants/:name/restores',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary:
          'Restore a backup of the tenant (or its latest) as a new, separate tenant; torn down after keepForMinutes unless kept. 404 without a backup, 409 while another restore of the tenant runs',
        params: Type.Object({ name: TenantName }),
        body: Type.Optional(
          Type.Object(
            {
              backupId: Type.Optional(BackupId),
              keepForMinutes: Type.Optional(
                Type.Integer({ minimum: 1, maximum: 43_200, description: 'Default: RESTORE_KEEP_FOR (1 day)' }),
              ),
            },
            { additionalProperties: false },
          ),
        ),
        response: { 202: StartedRestore, 401: problemRef, 409: problemRef },
      },
    },
    async (req, reply) => {
      const { config } = app.deps;
      const body = req.body ?? {};
      const started = await startRestore(restoreDeps(app), {
        source: req.params.name,
        backupId: body.backupId,
        keepForMs: body.keepForMinutes ? body.keepForMinutes * 60_000 : config.RESTORE_KEEP_FOR,
      });
      req.log.info({ tenant: req.params.name, restore: started.restore.name }, 'restore started');
      return reply.code(202).send({ ...started, temporalUiUrl: temporalUiLink(config, started.workflowId) });
    },
  );
}

/** Start a restore of a tenant's backup into the tenant itself. */
function startRestoreInPlaceRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/api/ops/tenants/:name/restore-in-place',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary:
          "Restore a backup of the tenant (or its latest) into the tenant itself, replacing its database and filestore after a safety backup of them. Only for a cancelled tenant, or with confirm set to the tenant's name (400 for another name, 409 without); 404 without a backup, 409 while another restore of the tenant runs",
        params: Type.Object({ name: TenantName }),
        body: Type.Optional(
          Type.Object(
            {
              backupId: Type.Optional(BackupId),
              confirm: Type.Optional(
                Type.String({
                  maxLength: 30,
                  description: "The tenant's name: needed unless the tenant is cancelled (its data is replaced)",
                }),
              ),
            },
            { additionalProperties: false },
          ),
        ),
        response: { 202: StartedRestore, 400: problemRef, 401: problemRef, 404: problemRef, 409: problemRef },
      },
    },
    async (req, reply) => {
      const body = req.body ?? {};
      const started = await startRestoreInPlace(restoreDeps(app), {
        tenant: req.params.name,
        backupId: body.backupId,
        confirm: body.confirm,
      });
      req.log.info({ tenant: req.params.name, restore: started.restore.name }, 'in-place restore started');
      return reply.code(202).send({ ...started, temporalUiUrl: temporalUiLink(app.deps.config, started.workflowId) });
    },
  );
}

/** A tenant's restored copies. */
function listRestoresRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/ops/tenants/:name/restores',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: "The tenant's restores (copies and in place), newest first",
        params: Type.Object({ name: TenantName }),
        response: { 200: Type.Object({ items: Type.Array(Restore) }), 401: problemRef },
      },
    },
    async (req) => ({ items: await listRestores(app.deps.pool, req.params.name) }),
  );
}

/** One restored copy. */
function getRestoreRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/ops/restores/:name',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'One restored copy: where it is, which backup it came from, until when it stays',
        params: Type.Object({ name: TenantName }),
        response: { 200: Type.Intersect([Restore, Type.Object({ temporalUiUrl: Type.String() })]), 401: problemRef },
      },
    },
    async (req) => {
      const restore = await getRestore(app.deps.pool, req.params.name);
      if (!restore) throw new AppError('NOT_FOUND', `no restore named "${req.params.name}"`);
      return { ...restore, temporalUiUrl: temporalUiLink(app.deps.config, restoreWorkflowId(restore.name)) };
    },
  );
}

/** Keep a restored copy past its time. */
function keepRestoreRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/api/ops/restores/:name/keep',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: 'Keep a restored copy: it is not torn down when its time is up',
        params: Type.Object({ name: TenantName }),
        response: { 200: Restore, 401: problemRef, 409: problemRef },
      },
    },
    async (req) => keepRestore(restoreDeps(app), req.params.name),
  );
}

/** A tenant's backup drills. */
function listDrillsRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    '/api/ops/tenants/:name/drills',
    {
      config: { access: access.service('operator') },
      schema: {
        tags: ['ops'],
        summary: "The tenant's backup drills, newest first (the last drill, its outcome and duration first)",
        params: Type.Object({ name: TenantName }),
        response: { 200: Type.Object({ items: Type.Array(Drill) }), 401: problemRef },
      },
    },
    async (req) => ({ items: await listDrills(app.deps.pool, req.params.name) }),
  );
}

export default async function opsRestoreRoutes(fastify: FastifyInstance) {
  listBackupsRoute(fastify);
  startBackupRoute(fastify);
  startRestoreRoute(fastify);
  startRestoreInPlaceRoute(fastify);
  listRestoresRoute(fastify);
  getRestoreRoute(fastify);
  keepRestoreRoute(fastify);
  listDrillsRoute(fastify);
}
