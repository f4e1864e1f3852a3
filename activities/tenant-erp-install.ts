/**
 * The from-scratch install of a tenant database whose template is missing (domain/erp/from-scratch.ts):
 * a long activity that heartbeats every few seconds with the module being loaded, so a worker that
 * dies mid-install is noticed within the heartbeat timeout and the install is retried (from the
 * start: the half-made database is dropped) on another worker.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import {
  InstallerUnavailableError,
  installTenantDatabaseFromScratch,
  type InstallProgress,
} from '../domain/erp/from-scratch.js';
import { InvalidDatabaseNameError, templateDatabaseName } from '../domain/erp/tenant-database.js';
import { TenantErrorType, type TenantClientSpec } from '../domain/tenants/types.js';
import type { PlatformDeps } from './deps.js';

/** How often the install reports that it is alive (well inside the workflow's heartbeat timeout). */
const HEARTBEAT_EVERY_MS = 2_000;

/** What a heartbeat says (shown on the pending activity in the Temporal UI). */
const progressDetail = (progress: InstallProgress | undefined) =>
  progress ? `loading module ${progress.module} (${progress.index}/${progress.total})` : 'creating the database';

export const createTenantErpInstallActivities = ({ erpAdminPool, erpInstaller }: PlatformDeps) => ({
  /**
   * The tier's modules installed by the ERP itself into the new tenant database; 'exists' when an
   * earlier attempt finished it. Also makes the missing template from it, when no other install does.
   */
  async installTenantDatabase(input: { database: string; spec: TenantClientSpec }) {
    const ctx = Context.current();
    const template = templateDatabaseName(input.spec.tier, input.spec.erpVersion);
    let progress: InstallProgress | undefined;
    const beat = () => ctx.heartbeat({ attempt: ctx.info.attempt, progress: progressDetail(progress) });
    beat();
    const alive = setInterval(beat, HEARTBEAT_EVERY_MS);
    try {
      if (!erpInstaller) throw new InstallerUnavailableError('this worker has no ERP installer');
      const result = await installTenantDatabaseFromScratch(erpAdminPool, erpInstaller, {
        database: input.database,
        tier: input.spec.tier,
        version: input.spec.erpVersion,
        onProgress: (p) => {
          progress = p;
          beat();
        },
        signal: ctx.cancellationSignal,
      });
      return { ...result, missingTemplate: template, attempt: ctx.info.attempt };
    } catch (err) {
      if (err instanceof InvalidDatabaseNameError)
        throw ApplicationFailure.create({
          type: TenantErrorType.InvalidName,
          message: err.message,
          nonRetryable: true,
        });
      if (err instanceof InstallerUnavailableError)
        throw ApplicationFailure.create({ type: 'InstallerUnavailable', message: err.message, nonRetryable: true });
      throw err;
    } finally {
      clearInterval(alive);
    }
  },
});
