/**
 * The tenant's dedicated ERP API user (specification §5.5): the platform reads a tenant's ERP as
 * this user only, never with a human's credentials. Login `api@<tenant hostname>`, a long random
 * password from the CSPRNG, minimal rights (internal user + accounting read-only; no settings, no
 * billing, so every write is refused). The password is stored hashed (Odoo's pbkdf2-sha512) in the
 * tenant database and sealed with SECRETS_KEY in the platform table `tenant_erp_credentials`.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { open, seal } from '../../lib/secret-box.js';
import { hashOdooPassword, verifyOdooPassword } from './odoo-password.js';
import { databaseUrl } from './tenant-database.js';

/** res.groups ids of the template databases (sandbox/erp/demo-data.ts): Internal User, Accounting / Read-only. */
const API_USER_GROUPS = [2, 4];

export const erpApiLogin = (database: string) => `api@${database}`;

export async function ensureErpApiUser(
  deps: { platform: pg.Pool; erpDatabaseUrl: string; secretsKey: string },
  opts: { tenant: string; database: string },
): Promise<{ login: string; created: boolean }> {
  return withTransaction(deps.platform, async (platform) => {
    // one caller per tenant at a time; the second sees what the first stored
    await platform.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`erp-api-user:${opts.tenant}`]);
    const stored = await platform.query<{ login: string; password_encrypted: string }>(
      'SELECT login, password_encrypted FROM tenant_erp_credentials WHERE tenant = $1',
      [opts.tenant],
    );
    const login = stored.rows[0]?.login ?? erpApiLogin(opts.database);
    const known = stored.rows[0] ? open(stored.rows[0].password_encrypted, deps.secretsKey) : undefined;

    const erp = new pg.Client({ connectionString: databaseUrl(deps.erpDatabaseUrl, opts.database) });
    await erp.connect().catch((err: { code?: string }) => {
      throw err.code === '3D000' ? new Error(`tenant database ${opts.database} does not exist`) : err;
    });
    try {
      const user = await erp.query<{ id: number; password: string | null; active: boolean }>(
        'SELECT id, password, active FROM res_users WHERE login = $1',
        [login],
      );
      const existing = user.rows[0];
      if (existing && known && existing.active && (await verifyOdooPassword(known, existing.password))) {
        return { login, created: false }; // working already: leave it alone
      }
      // keep a stored password when the user is merely missing (e.g. the database was re-cloned)
      const password = known ?? randomBytes(32).toString('base64url');
      const hash = hashOdooPassword(password);
      let created = false;
      await erp.query('BEGIN');
      if (existing) {
        await erp.query('UPDATE res_users SET password = $2, active = true, write_date = now() WHERE id = $1', [existing.id, hash]);
      } else {
        const partner = await erp.query<{ id: number }>(
          `INSERT INTO res_partner (name, complete_name, email, is_company, active, customer_rank, supplier_rank, company_id)
           VALUES ('Platform API', 'Platform API', $1, false, true, 0, 0, 1) RETURNING id`,
          [login],
        );
        const inserted = await erp.query<{ id: number }>(
          `INSERT INTO res_users (login, partner_id, company_id, active, share, password)
           VALUES ($1, $2, 1, true, false, $3) RETURNING id`,
          [login, partner.rows[0]!.id, hash],
        );
        for (const gid of API_USER_GROUPS) {
          await erp.query('INSERT INTO res_groups_users_rel (gid, uid) VALUES ($1, $2) ON CONFLICT DO NOTHING', [gid, inserted.rows[0]!.id]);
        }
        created = true;
      }
      await erp.query('COMMIT');
      if (!known) {
        await platform.query(
          `INSERT INTO tenant_erp_credentials (tenant, login, password_encrypted) VALUES ($1, $2, $3)
           ON CONFLICT (tenant) DO UPDATE SET login = EXCLUDED.login, password_encrypted = EXCLUDED.password_encrypted`,
          [opts.tenant, login, seal(password, deps.secretsKey)],
        );
      }
      return { login, created };
    } catch (err) {
      await erp.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      await erp.end();
    }
  });
}

export async function loadErpCredentials(
  platform: pg.Pool,
  secretsKey: string,
  tenant: string,
): Promise<{ login: string; password: string } | null> {
  const res = await platform.query<{ login: string; password_encrypted: string }>(
    'SELECT login, password_encrypted FROM tenant_erp_credentials WHERE tenant = $1',
    [tenant],
  );
  const row = res.rows[0];
  return row ? { login: row.login, password: open(row.password_encrypted, secretsKey) } : null;
}
