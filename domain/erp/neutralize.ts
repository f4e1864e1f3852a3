/**
 * Neutralising a copy of a tenant's ERP database, as Odoo's `neutralize` does (odoo/modules/
 * neutralize.py runs each installed module's `data/neutralize.sql`; Odoo.sh does it for staging
 * copies): a restored copy must not send e-mail, run scheduled actions against the outside world,
 * post webhooks or charge through payment providers. These are the statements of Odoo 18's `base`,
 * `payment` and `mail` modules, each run where its table exists (the stand-in has `ir_act_server`
 * and `ir_config_parameter` of them; real Odoo all that its installed modules have).
 */
import type pg from 'pg';

const NEUTRALIZATION: { table: string; what: string; sql: string }[] = [
  { table: 'ir_mail_server', what: 'mail servers off', sql: 'UPDATE ir_mail_server SET active = false' },
  {
    table: 'ir_mail_server',
    what: 'a dummy mail server, so no fallback server from the command line is used',
    sql: `INSERT INTO ir_mail_server (name, smtp_port, smtp_host, smtp_encryption, active, smtp_authentication)
          VALUES ('neutralization - disable emails', 1025, 'invalid', 'none', true, 'login')`,
  },
  {
    table: 'ir_cron',
    what: 'scheduled actions off (but the autovacuum)',
    sql: `UPDATE ir_cron SET active = false
           WHERE id NOT IN (SELECT res_id FROM ir_model_data
                             WHERE model = 'ir.cron' AND name = 'autovacuum_job' AND module = 'base')`,
  },
  {
    table: 'ir_act_server',
    what: 'webhooks of automation rules cut',
    sql: `UPDATE ir_act_server SET webhook_url = 'neutralization - disable webhook' WHERE state = 'webhook'`,
  },
  {
    table: 'payment_provider',
    what: 'payment providers disabled',
    sql: `UPDATE payment_provider SET state = 'disabled' WHERE state NOT IN ('test', 'disabled')`,
  },
  { table: 'fetchmail_server', what: 'incoming mail servers off', sql: 'UPDATE fetchmail_server SET active = false' },
  {
    table: 'mail_template',
    what: 'mail templates without server',
    sql: 'UPDATE mail_template SET mail_server_id = NULL',
  },
  {
    table: 'ir_config_parameter',
    what: 'flagged database.is_neutralized',
    sql: `WITH updated AS (UPDATE ir_config_parameter SET value = 'true' WHERE key = 'database.is_neutralized' RETURNING 1)
          INSERT INTO ir_config_parameter (key, value) SELECT 'database.is_neutralized', 'true'
           WHERE NOT EXISTS (SELECT 1 FROM updated)`,
  },
];

/** Neutralises the database `db` is connected to, in one transaction; answers what was done. */
export async function neutralizeErpDatabase(db: pg.ClientBase): Promise<string[]> {
  const { rows } = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name = ANY($1)`,
    [[...new Set(NEUTRALIZATION.map((n) => n.table))]],
  );
  const present = new Set(rows.map((r) => r.table_name));
  const done: string[] = [];
  await db.query('BEGIN');
  try {
    for (const step of NEUTRALIZATION.filter((n) => present.has(n.table))) {
      await db.query(step.sql);
      done.push(step.what);
    }
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK');
    throw err;
  }
  return done;
}
