/** The tenant's filestore folder, always directly under FILESTORE_ROOT. */
import { createFilestore, FilestorePathError, wipeFilestore } from '../domain/tenants/filestore.js';
import { ApplicationFailure } from '@temporalio/common';
import { TenantErrorType } from '../domain/tenants/types.js';
import type { PlatformDeps } from './deps.js';

const refuseOutsideRoot = (err: unknown): never => {
  if (err instanceof FilestorePathError) {
    throw ApplicationFailure.create({
      type: TenantErrorType.PathOutsideRoot,
      message: err.message,
      nonRetryable: true,
    });
  }
  throw err;
};

export const createTenantFilestoreActivities = ({ config }: PlatformDeps) => ({
  async createFilestore(input: { tenant: string }) {
    return createFilestore(config.FILESTORE_ROOT, input.tenant).catch(refuseOutsideRoot);
  },
  async wipeFilestore(input: { tenant: string }) {
    return wipeFilestore(config.FILESTORE_ROOT, input.tenant).catch(refuseOutsideRoot);
  },
});
