/**
 * `ERP_BACKEND=odoo npm run dev` without ODOO_SRC: with no Odoo at ODOO_UPSTREAM_URL, or without a
 * template built by Odoo (the stand-in's template of the same name is no Odoo database), it stops
 * with what is missing and what to run; with an Odoo answering there and the template built, it goes
 * on, and says which other tiers' templates are missing and how to build them.
 *
 * The ERP PostgreSQL server here is started empty for this file, so the run's templates are untouched.
 */
import http from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDevOdooTemplates, ensureDevOdoo, OdooNotAvailable } from '../../scripts/dev-odoo.js';
import { freePort, startPostgres, type PostgresServer } from '../../scripts/local-servers.js';
import { odooTemplateMark } from '../../scripts/odoo-templates.js';
import { tempDir } from '../support/env.js';

let erpServer: PostgresServer;
let odooPort: number;
const servers: http.Server[] = [];

beforeAll(async () => {
  erpServer = await startPostgres({ dir: tempDir('dev-odoo-postgres'), port: await freePort() });
  // an Odoo's health probe
  const server = http.createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"pass"}'),
  );
  servers.push(server);
  odooPort = await freePort();
  await new Promise<void>((r) => server.listen(odooPort, '127.0.0.1', r));
});

afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  await erpServer?.stop();
});

const cfg = (port: number) => ({
  ODOO_UPSTREAM_URL: `http://127.0.0.1:${port}`,
  ERP_DATABASE_URL: erpServer.urlFor('postgres'),
  ODOO_DATA_DIR: '/nonexistent',
  ERP_ADMIN_PASSWORD: 'unused',
});

/** A template database named `name` whose comment is `comment` (what the stand-in's or Odoo's build leaves). */
async function template(name: string, comment: string) {
  const admin = new pg.Client({ connectionString: erpServer.urlFor('postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    await admin.query(`COMMENT ON DATABASE ${pg.escapeIdentifier(name)} IS ${pg.escapeLiteral(comment)}`);
    await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} WITH IS_TEMPLATE true`);
  } finally {
    await admin.end();
  }
}

describe('ERP_BACKEND=odoo npm run dev', () => {
  it('without ODOO_SRC and with no Odoo at ODOO_UPSTREAM_URL, says so and what to run', async () => {
    const port = await freePort();
    const err = await ensureDevOdoo(cfg(port), { tier: 'starter' }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(OdooNotAvailable);
    expect((err as Error).message).toContain(`none answers at ODOO_UPSTREAM_URL=http://127.0.0.1:${port}`);
    expect((err as Error).message).toContain('ODOO_SRC is not set');
    expect((err as Error).message).toContain('ERP_BACKEND=odoo ODOO_SRC=/path/to/odoo npm run dev');
    expect((err as Error).message).toContain('npm run odoo:templates');
  });

  it("with an Odoo answering but only the stand-in's template of that name, says to build it with Odoo", async () => {
    await template('erp_tpl_starter_18', JSON.stringify({ plana: 'erp-template', layout: 8, builtOn: '2026-11-26' }));
    const err = await ensureDevOdoo(cfg(odooPort), { tier: 'starter' }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(OdooNotAvailable);
    expect((err as Error).message).toContain(
      'the template erp_tpl_starter_18 the demo tenant is cloned from has not been built by Odoo',
    );
    expect((err as Error).message).toContain('ODOO_SRC=/path/to/odoo npm run odoo:templates');
  });

  it("goes on with an Odoo answering and its template built by Odoo, and names the other tiers' missing templates", async () => {
    await template('erp_tpl_pro_18', odooTemplateMark('18'));
    await expect(ensureDevOdoo(cfg(odooPort), { tier: 'pro' })).resolves.toBeUndefined();
    const said: string[] = [];
    await buildDevOdooTemplates(cfg(odooPort), { log: (msg) => said.push(msg) });
    expect(said).toEqual([
      'no Odoo template for starter, enterprise (erp_tpl_starter_18, erp_tpl_enterprise_18): tenants of those tiers wait for it; build with `TIERS=starter,enterprise ODOO_SRC=/path/to/odoo npm run odoo:templates`',
    ]);
  });
});
