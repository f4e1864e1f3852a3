/**
 * `ERP_BACKEND=odoo npm run dev` without ODOO_SRC and without an Odoo at ODOO_UPSTREAM_URL stops
 * with what is missing and what to run (it used to start and fail later with "The ERP of
 * demo.erp.plana.test answered HTTP 500"); with an Odoo answering there and the template built,
 * it goes on.
 */
import http from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureDevOdoo, OdooNotAvailable } from '../../scripts/dev-odoo.js';
import { freePort } from '../../scripts/local-servers.js';
import { runErpDatabaseUrl } from '../support/tenant-platform.js';

const servers: http.Server[] = [];
afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

const cfg = async (port: number) => ({
  ODOO_UPSTREAM_URL: `http://127.0.0.1:${port}`,
  ERP_DATABASE_URL: runErpDatabaseUrl(),
  ODOO_DATA_DIR: '/nonexistent',
  ERP_ADMIN_PASSWORD: 'unused',
});

describe('ERP_BACKEND=odoo npm run dev', () => {
  it('without ODOO_SRC and with no Odoo at ODOO_UPSTREAM_URL, says so and what to run', async () => {
    const port = await freePort();
    const err = await ensureDevOdoo(await cfg(port), { tier: 'starter' }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(OdooNotAvailable);
    expect((err as Error).message).toContain(`none answers at ODOO_UPSTREAM_URL=http://127.0.0.1:${port}`);
    expect((err as Error).message).toContain('ODOO_SRC is not set');
    expect((err as Error).message).toContain('ERP_BACKEND=odoo ODOO_SRC=/path/to/odoo npm run dev');
    expect((err as Error).message).toContain('npm run odoo:templates');
  });

  it('goes on with an Odoo answering at ODOO_UPSTREAM_URL and the template in place', async () => {
    const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"pass"}'));
    servers.push(server);
    const port = await freePort();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    // the run's PostgreSQL holds the stand-in's erp_tpl_starter_18 (global setup)
    await expect(ensureDevOdoo(await cfg(port), { tier: 'starter' })).resolves.toBeUndefined();
  });
});
