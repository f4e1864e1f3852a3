import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEV_TENANT_DOMAIN, EARLIER_DEV_TENANT_DOMAIN, devTenantDomain } from '../../scripts/dev-tenant-domain.js';

const fresh = () => path.join(mkdtempSync(path.join(os.tmpdir(), 'dev-domain-')), 'data');

describe("npm run dev's tenant domain", () => {
  it('is erp.localhost for a fresh data dir, and stays so on the next start', () => {
    const dir = fresh();
    expect(devTenantDomain(dir, {})).toBe(DEV_TENANT_DOMAIN);
    expect(devTenantDomain(dir, {})).toBe(DEV_TENANT_DOMAIN);
  });

  it('stays erp.plana.test for a data dir made before (its tenants are named after it)', () => {
    const dir = fresh();
    mkdirSync(path.join(dir, 'postgres'), { recursive: true });
    expect(devTenantDomain(dir, {})).toBe(EARLIER_DEV_TENANT_DOMAIN);
    expect(devTenantDomain(dir, {})).toBe(EARLIER_DEV_TENANT_DOMAIN);
  });

  it('is TENANT_DOMAIN when set', () => {
    expect(devTenantDomain(fresh(), { TENANT_DOMAIN: 'erp.example.org' })).toBe('erp.example.org');
  });
});
