/**
 * The tenants' host names on `npm run dev`: `<slug>.erp.localhost`. Browsers (Chromium, Firefox)
 * resolve every name under `.localhost` to this machine without a hosts entry or DNS (RFC 6761), so
 * the portal's "Open ERP" reaches the demo tenant's ERP at http://demo.erp.localhost:8069 as it is.
 * The choice is kept in DATA_DIR/dev-tenant-domain: a data dir made before it keeps `erp.plana.test`
 * (its tenants' databases and routes are named after their host). TENANT_DOMAIN in the environment wins.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const DEV_TENANT_DOMAIN = 'erp.localhost';
/** The domain of data dirs made before DEV_TENANT_DOMAIN (the configuration's default). */
export const EARLIER_DEV_TENANT_DOMAIN = 'erp.plana.test';

/** Whether a browser resolves the hosts under `domain` to this machine by itself. */
export const resolvesToLoopback = (domain: string) => domain === 'localhost' || domain.endsWith('.localhost');

export function devTenantDomain(dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.TENANT_DOMAIN) return env.TENANT_DOMAIN;
  const file = path.join(dataDir, 'dev-tenant-domain');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  // a data dir with a database server already: its tenants are under the earlier domain
  const domain = existsSync(path.join(dataDir, 'postgres')) ? EARLIER_DEV_TENANT_DOMAIN : DEV_TENANT_DOMAIN;
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, `${domain}\n`);
  return domain;
}
