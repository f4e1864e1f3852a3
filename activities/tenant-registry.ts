/** The platform's own records of a tenant: the subdomain reservation, the tenants row, the published status. */
import { ApplicationFailure } from '@temporalio/common';
import { recordTenantStatus, reserveSubdomain, SubdomainTakenError } from '../domain/tenants/tenant-records.js';
import { TenantErrorType, type TenantClientSpec, type TenantStatus } from '../domain/tenants/types.js';
import type { PlatformDeps } from './deps.js';

export const createTenantRegistryActivities = ({ config, platformPool }: PlatformDeps) => ({
  /** Taken by another TenantClient: a non-retryable SubdomainTaken failure. */
  async reserveSubdomain(input: { name: string; uid: string; spec: TenantClientSpec }) {
    try {
      return await reserveSubdomain(platformPool, { ...input, tenantDomain: config.TENANT_DOMAIN });
    } catch (err) {
      if (err instanceof SubdomainTakenError)
        throw ApplicationFailure.create({
          type: TenantErrorType.SubdomainTaken,
          message: err.message,
          nonRetryable: true,
        });
      throw err;
    }
  },

  /** Publishes the workflow's status; the name held by another TenantClient object is a non-retryable failure. */
  async recordTenantStatus(input: {
    name: string;
    uid: string;
    spec: TenantClientSpec;
    status: TenantStatus;
  }): Promise<void> {
    if (!(await recordTenantStatus(platformPool, input)))
      throw ApplicationFailure.create({
        message: `tenant ${input.name} is published by another TenantClient object than ${input.uid}`,
        nonRetryable: true,
      });
  },
});
