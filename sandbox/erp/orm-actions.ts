/** The buttons the platform presses through the ORM: an invoice's Confirm, the Apps screen's install and update. */
import { AUTH_OIDC_MODULE } from './odoo-series.js';
import { STAND_IN_ADDONS } from './demo-data.js';
import { INVITATION_SCOPE_KEY } from './oauth-signup.js';
import { registerModelSql } from './models.js';
import { missingRecords, userError } from './odoo-errors.js';
import { idsOf, modelsFor, type Method } from './orm-context.js';

export const actionMethods: Record<string, Method> = {
  /**
   * Odoo's `action_post` (the Confirm button): a draft invoice gets its number (INV/<year>/<n>) and
   * is posted; anything but a draft is Odoo's UserError.
   */
  async action_post(ctx, model, a) {
    const ids = idsOf(a.ids);
    const { rows } = await ctx.db.query<{ id: number; state: string }>(
      'SELECT id, state FROM account_move WHERE id = ANY($1)',
      [ids],
    );
    const notDraft = rows.find((r) => r.state !== 'draft');
    if (notDraft) throw userError(`The entry (id ${notDraft.id}) is already posted.`);
    if (rows.length !== ids.length) throw missingRecords(model.name, ids, ctx.uid);
    await ctx.db.query(
      `UPDATE account_move m SET state = 'posted', write_date = now() at time zone 'UTC',
              name = CASE WHEN m.name IS NULL OR m.name = '/' THEN 'INV/' || extract(year FROM coalesce(m.invoice_date, current_date)) || '/' ||
                lpad((SELECT count(*) + 1 FROM account_move p WHERE p.state = 'posted' AND p.move_type = m.move_type)::text, 5, '0') ELSE m.name END
        WHERE id = ANY($1)`,
      [ids],
    );
    return true;
  },

  /**
   * Odoo's `button_immediate_install`: installs the modules now (the stand-in has no code to load,
   * so the state is what changes) and answers the client action that reloads the web client.
   * Installed modules stay as they are; an uninstallable one is Odoo's UserError.
   */
  async button_immediate_install(ctx, model, a) {
    const ids = idsOf(a.ids);
    const { rows } = await ctx.db.query<{ id: number; name: string; state: string }>(
      'SELECT id, name, state FROM ir_module_module WHERE id = ANY($1)',
      [ids],
    );
    const missing = ids.filter((id) => !rows.some((r) => r.id === id));
    if (missing.length) throw missingRecords(model.name, missing, ctx.uid);
    const uninstallable = rows.find((r) => r.state === 'uninstallable');
    if (uninstallable)
      throw userError(
        `You try to install module "${uninstallable.name}" that depends on module "${uninstallable.name}".\nBut the latter module is not available in your system.`,
      );
    await ctx.db.query(
      `UPDATE ir_module_module SET state = 'installed', latest_version = coalesce(latest_version, $2), write_date = now() at time zone 'UTC'
        WHERE id = ANY($1) AND state IN ('uninstalled', 'to install', 'to upgrade')`,
      [ids, `${ctx.version}.0.1.0`],
    );
    // auth_signup's install data (auth_oidc depends on it): free sign-up, unless the database has a scope already
    if (rows.some((r) => r.name === AUTH_OIDC_MODULE && r.state !== 'installed'))
      await ctx.db.query(
        `INSERT INTO ir_config_parameter (key, value) SELECT $1::varchar, 'b2c' WHERE NOT EXISTS (SELECT 1 FROM ir_config_parameter WHERE key = $1::varchar)`,
        [INVITATION_SCOPE_KEY],
      );
    // the models the installed modules bring now exist (ir.model, ir.model.fields)
    for (const m of Object.values(modelsFor(ctx.version))) {
      if (m.module && rows.some((r) => r.name === m.module)) await ctx.db.query(registerModelSql(m));
    }
    return { type: 'ir.actions.client', tag: 'reload', params: { menu_id: false } };
  },

  /** Odoo's `update_list`: modules of the addons path (STAND_IN_ADDONS) that the database does not list yet are added, not installed. */
  async update_list(ctx) {
    const { rows } = await ctx.db.query<{ name: string }>('SELECT name FROM ir_module_module');
    const known = new Set(rows.map((r) => r.name));
    const added = STAND_IN_ADDONS.filter((mod) => !known.has(mod.name));
    for (const mod of added) {
      await ctx.db.query(
        `INSERT INTO ir_module_module (name, shortdesc, state, application, sequence) VALUES ($1, $2, 'uninstalled', $3, 100)`,
        [mod.name, mod.title, mod.application],
      );
    }
    return [0, added.length];
  },
};
