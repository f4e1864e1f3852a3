/**
 * The Odoo models the stand-in serves, shaped like Odoo's own (same model names, table names,
 * field names, field types and selection values), per ERP version. The template databases are
 * created from these definitions and the XML-RPC layer reads them to answer `fields_get`, to check
 * field names and to format values (many2one as `[id, name]`, empty as `false`).
 *
 * Version differences modelled (checked against Odoo's sources):
 * - 19: `res.users.groups_id` was renamed `group_ids`;
 * - 19: `read_group` is deprecated in favour of `formatted_read_group` (both are served on 19,
 *   only `read_group` on 17 and 18; see sandbox/erp/orm-group.ts).
 * - 17: API keys never expire: `res.groups` has no `api_key_duration` (sandbox/erp/apikeys.ts).
 * - OCA auth_oidc: 19.0.1.0.0 has no `end_session_endpoint` on `auth.oauth.provider`; 17.0.1.2.0 adds
 *   `auth_link_params` (the wheels on PyPI the real-Odoo suite installs).
 * Everything else the dashboards read (`account.move` amounts, `payment_state`, `invoice_date_due`,
 * `account.bank.statement.line.is_reconciled`, `account.account.account_type`) has the same name
 * and meaning in 17, 18 and 19.
 */
import { AUTH_OIDC_MODULE, type ErpVersion } from './odoo-series.js';

export type FieldType =
  | 'integer'
  | 'char'
  | 'text'
  | 'boolean'
  | 'date'
  | 'datetime'
  | 'float'
  | 'monetary'
  | 'selection'
  | 'many2one'
  | 'one2many'
  | 'many2many';

export interface FieldDef {
  type: FieldType;
  string: string;
  relation?: string;
  selection?: [string, string][];
  /** many2many: link table and its columns (this side, other side). */
  link?: { table: string; column: string; other: string };
  /** A computed, read-only field: SQL over the model's table (alias `t`). */
  sql?: string;
  required?: boolean;
  /** one2many: the many2one field of `relation` that points back (read only through this stand-in). */
  inverse?: string;
}

export interface ModelDef {
  name: string;
  table: string;
  description: string;
  /** Odoo's `_order`. */
  order: string;
  /** The field whose value is the record's display name (`_rec_name`). */
  recName: string;
  fields: Record<string, FieldDef>;
  /** The module that brings the model: without it installed, the model does not exist (Odoo's registry). */
  module?: string;
}

const sel = (...pairs: [string, string][]) => pairs;
const common = (): Record<string, FieldDef> => ({
  id: { type: 'integer', string: 'ID' },
  create_date: { type: 'datetime', string: 'Created on' },
  write_date: { type: 'datetime', string: 'Last Updated on' },
});

export const MOVE_TYPES = sel(
  ['entry', 'Journal Entry'],
  ['out_invoice', 'Customer Invoice'],
  ['out_refund', 'Customer Credit Note'],
  ['in_invoice', 'Vendor Bill'],
  ['in_refund', 'Vendor Credit Note'],
  ['out_receipt', 'Sales Receipt'],
  ['in_receipt', 'Purchase Receipt'],
);
export const PAYMENT_STATES = sel(
  ['not_paid', 'Not Paid'],
  ['in_payment', 'In Payment'],
  ['paid', 'Paid'],
  ['partial', 'Partially Paid'],
  ['reversed', 'Reversed'],
  ['invoicing_legacy', 'Invoicing App Legacy'],
);
export const ACCOUNT_TYPES = sel(
  ['asset_receivable', 'Receivable'],
  ['asset_cash', 'Bank and Cash'],
  ['asset_current', 'Current Assets'],
  ['liability_payable', 'Payable'],
  ['liability_current', 'Current Liabilities'],
  ['equity', 'Equity'],
  ['income', 'Income'],
  ['expense', 'Expenses'],
);

export function odooModels(version: ErpVersion): Record<string, ModelDef> {
  const models: ModelDef[] = [
    {
      name: 'res.currency',
      table: 'res_currency',
      description: 'Currency',
      order: 'active desc, name',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Currency', required: true },
        symbol: { type: 'char', string: 'Symbol' },
        active: { type: 'boolean', string: 'Active' },
      },
    },
    {
      name: 'res.company',
      table: 'res_company',
      description: 'Companies',
      order: 'sequence, name',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Company Name', required: true },
        sequence: { type: 'integer', string: 'Sequence' },
        currency_id: { type: 'many2one', string: 'Currency', relation: 'res.currency' },
        partner_id: { type: 'many2one', string: 'Partner', relation: 'res.partner' },
        email: { type: 'char', string: 'Email' },
        vat: { type: 'char', string: 'Tax ID' },
      },
    },
    {
      name: 'res.partner',
      table: 'res_partner',
      description: 'Contact',
      order: 'complete_name ASC, id DESC',
      recName: 'complete_name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Name' },
        complete_name: { type: 'char', string: 'Complete Name' },
        is_company: { type: 'boolean', string: 'Is a Company' },
        email: { type: 'char', string: 'Email' },
        phone: { type: 'char', string: 'Phone' },
        vat: { type: 'char', string: 'Tax ID' },
        street: { type: 'char', string: 'Street' },
        city: { type: 'char', string: 'City' },
        zip: { type: 'char', string: 'Zip' },
        customer_rank: { type: 'integer', string: 'Customer Rank' },
        supplier_rank: { type: 'integer', string: 'Supplier Rank' },
        company_id: { type: 'many2one', string: 'Company', relation: 'res.company' },
        active: { type: 'boolean', string: 'Active' },
      },
    },
    {
      name: 'res.groups',
      table: 'res_groups',
      description: 'Access Groups',
      order: 'name',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Name', required: true },
        // the longest API key (in days) a member may make; 0 for none of its groups: 1 day (18+: 17's keys never expire)
        ...(version === '17'
          ? {}
          : { api_key_duration: { type: 'float' as const, string: 'API Keys maximum duration days' } }),
        implied_ids: {
          type: 'many2many',
          string: 'Inherits',
          relation: 'res.groups',
          link: { table: 'res_groups_implied_rel', column: 'gid', other: 'hid' },
        },
      },
    },
    {
      name: 'ir.config_parameter',
      table: 'ir_config_parameter',
      description: 'System Parameter',
      order: 'key',
      recName: 'key',
      fields: {
        ...common(),
        key: { type: 'char', string: 'Key', required: true },
        value: { type: 'text', string: 'Value', required: true },
      },
    },
    {
      // external identifiers (`module.name` → model + id): how groups are found, never by id
      name: 'ir.model.data',
      table: 'ir_model_data',
      description: 'Model Data',
      order: 'module, model, name',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'External Identifier', required: true },
        module: { type: 'char', string: 'Module', required: true },
        model: { type: 'char', string: 'Model Name', required: true },
        res_id: { type: 'integer', string: 'Record ID' },
        noupdate: { type: 'boolean', string: 'Non Updatable' },
      },
    },
    {
      // auth_oauth's providers with OCA auth_oidc's fields (flow, token endpoint, JWKS, PKCE verifier)
      name: 'auth.oauth.provider',
      table: 'auth_oauth_provider',
      description: 'OAuth2 provider',
      order: 'sequence, name',
      recName: 'name',
      module: AUTH_OIDC_MODULE,
      fields: {
        ...common(),
        name: { type: 'char', string: 'Provider name', required: true },
        client_id: { type: 'char', string: 'Client ID' },
        client_secret: { type: 'char', string: 'Client Secret' },
        auth_endpoint: { type: 'char', string: 'Authorization URL', required: true },
        scope: { type: 'char', string: 'Scope' },
        validation_endpoint: { type: 'char', string: 'UserInfo URL' },
        data_endpoint: { type: 'char', string: 'Data Endpoint' },
        token_endpoint: { type: 'char', string: 'Token URL' },
        jwks_uri: { type: 'char', string: 'JWKS URL' },
        // auth_oidc 17.0 and 18.0 have an end-session URL, 19.0 has not; 17.0 also takes extra authorize parameters
        ...(version === '19' ? {} : { end_session_endpoint: { type: 'char' as const, string: 'End Session URL' } }),
        ...(version === '17' ? { auth_link_params: { type: 'char' as const, string: 'Auth Link Params' } } : {}),
        code_verifier: { type: 'char', string: 'Code Verifier' },
        flow: {
          type: 'selection',
          string: 'Auth Flow',
          selection: sel(
            ['access_token', 'OAuth2'],
            ['id_token_code', 'OpenID Connect (authorization code flow)'],
            ['id_token', 'OpenID Connect (implicit flow, not recommended)'],
          ),
        },
        token_map: { type: 'char', string: 'Token Map' },
        enabled: { type: 'boolean', string: 'Allowed' },
        css_class: { type: 'char', string: 'CSS class' },
        body: { type: 'char', string: 'Login button label', required: true },
        sequence: { type: 'integer', string: 'Sequence' },
      },
    },
    {
      name: 'res.users',
      table: 'res_users',
      description: 'User',
      order: 'name, login',
      recName: 'name',
      fields: {
        ...common(),
        login: { type: 'char', string: 'Login', required: true },
        // res.users inherits res.partner: its name is the partner's.
        name: { type: 'char', string: 'Name', sql: '(SELECT p.name FROM res_partner p WHERE p.id = t.partner_id)' },
        partner_id: { type: 'many2one', string: 'Related Partner', relation: 'res.partner', required: true },
        company_id: { type: 'many2one', string: 'Company', relation: 'res.company', required: true },
        company_ids: {
          type: 'many2many',
          string: 'Companies',
          relation: 'res.company',
          link: { table: 'res_company_users_rel', column: 'user_id', other: 'cid' },
        },
        active: { type: 'boolean', string: 'Active' },
        share: { type: 'boolean', string: 'Share User' },
        // auth_oauth: the user a provider's subject signs in as (unique per provider)
        oauth_provider_id: { type: 'many2one', string: 'OAuth Provider', relation: 'auth.oauth.provider' },
        oauth_uid: { type: 'char', string: 'OAuth User ID' },
        [version === '19' ? 'group_ids' : 'groups_id']: {
          type: 'many2many',
          string: 'Groups',
          relation: 'res.groups',
          link: { table: 'res_groups_users_rel', column: 'uid', other: 'gid' },
        },
      },
    },
    {
      name: 'account.account',
      table: 'account_account',
      description: 'Account',
      order: 'code, id',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Account Name', required: true },
        code: { type: 'char', string: 'Code' },
        account_type: { type: 'selection', string: 'Type', selection: ACCOUNT_TYPES },
        reconcile: { type: 'boolean', string: 'Allow Reconciliation' },
      },
    },
    {
      name: 'account.journal',
      table: 'account_journal',
      description: 'Journal',
      order: 'sequence, type, code',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Journal Name', required: true },
        code: { type: 'char', string: 'Short Code' },
        type: {
          type: 'selection',
          string: 'Type',
          // 18 added credit-card journals
          selection: sel(
            ['sale', 'Sales'],
            ['purchase', 'Purchase'],
            ['cash', 'Cash'],
            ['bank', 'Bank'],
            ...(version === '17' ? [] : sel(['credit', 'Credit Card'])),
            ['general', 'Miscellaneous'],
          ),
        },
        sequence: { type: 'integer', string: 'Sequence' },
        default_account_id: { type: 'many2one', string: 'Default Account', relation: 'account.account' },
        currency_id: { type: 'many2one', string: 'Currency', relation: 'res.currency' },
        company_id: { type: 'many2one', string: 'Company', relation: 'res.company' },
        active: { type: 'boolean', string: 'Active' },
      },
    },
    {
      name: 'account.move',
      table: 'account_move',
      description: 'Journal Entry',
      order: 'date desc, name desc, id desc',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Number' },
        ref: { type: 'char', string: 'Reference' },
        move_type: { type: 'selection', string: 'Type', selection: MOVE_TYPES },
        state: {
          type: 'selection',
          string: 'Status',
          selection: sel(['draft', 'Draft'], ['posted', 'Posted'], ['cancel', 'Cancelled']),
        },
        // 18 added `blocked` (payment on hold: still due)
        payment_state: {
          type: 'selection',
          string: 'Payment Status',
          selection: version === '17' ? PAYMENT_STATES : [...PAYMENT_STATES, ['blocked', 'Blocked']],
        },
        date: { type: 'date', string: 'Date' },
        invoice_date: { type: 'date', string: 'Invoice/Bill Date' },
        invoice_date_due: { type: 'date', string: 'Due Date' },
        partner_id: { type: 'many2one', string: 'Partner', relation: 'res.partner' },
        journal_id: { type: 'many2one', string: 'Journal', relation: 'account.journal' },
        company_id: { type: 'many2one', string: 'Company', relation: 'res.company' },
        currency_id: { type: 'many2one', string: 'Currency', relation: 'res.currency' },
        amount_untaxed: { type: 'monetary', string: 'Untaxed Amount' },
        amount_tax: { type: 'monetary', string: 'Tax' },
        amount_total: { type: 'monetary', string: 'Total' },
        amount_residual: { type: 'monetary', string: 'Amount Due' },
        amount_untaxed_signed: { type: 'monetary', string: 'Untaxed Amount Signed' },
        amount_total_signed: { type: 'monetary', string: 'Total Signed' },
        amount_residual_signed: { type: 'monetary', string: 'Amount Due Signed' },
      },
    },
    {
      name: 'account.move.line',
      table: 'account_move_line',
      description: 'Journal Item',
      order: 'date desc, move_name desc, id',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Label' },
        move_id: { type: 'many2one', string: 'Journal Entry', relation: 'account.move', required: true },
        move_name: { type: 'char', string: 'Number' },
        account_id: { type: 'many2one', string: 'Account', relation: 'account.account' },
        partner_id: { type: 'many2one', string: 'Partner', relation: 'res.partner' },
        journal_id: { type: 'many2one', string: 'Journal', relation: 'account.journal' },
        company_id: { type: 'many2one', string: 'Company', relation: 'res.company' },
        date: { type: 'date', string: 'Date' },
        date_maturity: { type: 'date', string: 'Due Date' },
        parent_state: {
          type: 'selection',
          string: 'Status',
          selection: sel(['draft', 'Draft'], ['posted', 'Posted'], ['cancel', 'Cancelled']),
        },
        debit: { type: 'monetary', string: 'Debit' },
        credit: { type: 'monetary', string: 'Credit' },
        balance: { type: 'monetary', string: 'Balance' },
        amount_residual: { type: 'monetary', string: 'Residual Amount' },
        reconciled: { type: 'boolean', string: 'Reconciled' },
      },
    },
    {
      name: 'account.bank.statement.line',
      table: 'account_bank_statement_line',
      description: 'Bank Statement Line',
      order: 'internal_index desc',
      recName: 'payment_ref',
      fields: {
        ...common(),
        move_id: { type: 'many2one', string: 'Journal Entry', relation: 'account.move' },
        journal_id: { type: 'many2one', string: 'Journal', relation: 'account.journal', required: true },
        partner_id: { type: 'many2one', string: 'Partner', relation: 'res.partner' },
        company_id: { type: 'many2one', string: 'Company', relation: 'res.company' },
        date: { type: 'date', string: 'Date', required: true },
        payment_ref: { type: 'char', string: 'Label' },
        amount: { type: 'monetary', string: 'Amount', required: true },
        amount_residual: { type: 'float', string: 'Residual Amount' },
        is_reconciled: { type: 'boolean', string: 'Is Reconciled' },
        internal_index: { type: 'char', string: 'Internal Reference' },
        // Odoo's bank statement import: set by importers, unique (_sql_constraints 'unique_import_id')
        unique_import_id: { type: 'char', string: 'Import ID' },
      },
    },
    {
      name: 'ir.module.module',
      table: 'ir_module_module',
      description: 'Module',
      order: 'application desc, sequence, name',
      recName: 'shortdesc',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Technical Name' },
        shortdesc: { type: 'char', string: 'Module Name' },
        state: {
          type: 'selection',
          string: 'Status',
          selection: sel(
            ['uninstallable', 'Uninstallable'],
            ['uninstalled', 'Not Installed'],
            ['installed', 'Installed'],
            ['to upgrade', 'To be upgraded'],
            ['to remove', 'To be removed'],
            ['to install', 'To be installed'],
          ),
        },
        latest_version: { type: 'char', string: 'Installed Version' },
        application: { type: 'boolean', string: 'Application' },
        sequence: { type: 'integer', string: 'Sequence' },
      },
    },
    // the models and their fields (filled from these definitions when a template is built)
    {
      name: 'ir.model',
      table: 'ir_model',
      description: 'Models',
      order: 'model',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Model Description' },
        model: { type: 'char', string: 'Model' },
      },
    },
    {
      name: 'ir.model.fields',
      table: 'ir_model_fields',
      description: 'Fields',
      order: 'name',
      recName: 'field_description',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Field Name' },
        field_description: { type: 'char', string: 'Field Label' },
        model: { type: 'char', string: 'Model Name' },
        model_id: { type: 'many2one', string: 'Model', relation: 'ir.model' },
        ttype: { type: 'char', string: 'Field Type' },
      },
    },
    // base_automation (automation rules) and the server actions they run; stand-in: only
    // "On save" rules whose action is "Send Webhook Notification" do anything (automation.ts)
    {
      name: 'base.automation',
      table: 'base_automation',
      description: 'Automation Rule',
      order: 'id',
      recName: 'name',
      module: 'base_automation',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Automation Rule Name', required: true },
        model_id: { type: 'many2one', string: 'Model', relation: 'ir.model', required: true },
        active: { type: 'boolean', string: 'Active' },
        trigger: {
          type: 'selection',
          string: 'Trigger',
          selection: sel(
            ['on_state_set', 'State is set to'],
            ['on_create_or_write', 'On save'],
            ['on_create', 'On creation'],
            ['on_write', 'On update'],
            ['on_unlink', 'On deletion'],
            ['on_time', 'Based on date field'],
            ['on_webhook', 'On webhook'],
          ),
        },
        filter_pre_domain: { type: 'char', string: 'Before Update Domain' },
        filter_domain: { type: 'char', string: 'Apply on' },
        action_server_ids: {
          type: 'one2many',
          string: 'Actions',
          relation: 'ir.actions.server',
          inverse: 'base_automation_id',
        },
      },
    },
    {
      name: 'ir.actions.server',
      table: 'ir_act_server',
      description: 'Server Actions',
      order: 'sequence, name',
      recName: 'name',
      fields: {
        ...common(),
        name: { type: 'char', string: 'Action Name' },
        model_id: { type: 'many2one', string: 'Model', relation: 'ir.model', required: true },
        state: {
          type: 'selection',
          string: 'Type',
          selection: sel(
            ['object_write', 'Update Record'],
            ['object_create', 'Create Record'],
            ['code', 'Execute Code'],
            ['webhook', 'Send Webhook Notification'],
            ['multi', 'Execute Existing Actions'],
          ),
        },
        usage: {
          type: 'selection',
          string: 'Usage',
          selection: sel(
            ['ir_actions_server', 'Server Action'],
            ['ir_cron', 'Scheduled Action'],
            ['base_automation', 'Automation Rule'],
          ),
        },
        sequence: { type: 'integer', string: 'Sequence' },
        webhook_url: { type: 'char', string: 'Webhook URL' },
        webhook_field_ids: {
          type: 'many2many',
          string: 'Webhook Fields',
          relation: 'ir.model.fields',
          link: { table: 'ir_act_server_webhook_field_rel', column: 'server_id', other: 'field_id' },
        },
        base_automation_id: { type: 'many2one', string: 'Automation Rule', relation: 'base.automation' },
      },
    },
    // stock (Inventory): only the moves, enough for stock.changed (a move set to done)
    {
      name: 'stock.move',
      table: 'stock_move',
      description: 'Stock Move',
      order: 'sequence, id',
      recName: 'reference',
      module: 'stock',
      fields: {
        ...common(),
        reference: { type: 'char', string: 'Reference' },
        product_id: { type: 'integer', string: 'Product' },
        product_uom_qty: { type: 'float', string: 'Demand' },
        quantity: { type: 'float', string: 'Quantity' },
        location_id: { type: 'integer', string: 'Source Location' },
        location_dest_id: { type: 'integer', string: 'Destination Location' },
        date: { type: 'datetime', string: 'Date Scheduled' },
        sequence: { type: 'integer', string: 'Sequence' },
        company_id: { type: 'many2one', string: 'Company', relation: 'res.company' },
        state: {
          type: 'selection',
          string: 'Status',
          selection: sel(
            ['draft', 'New'],
            ['waiting', 'Waiting Another Move'],
            ['confirmed', 'Waiting Availability'],
            ['partially_available', 'Partially Available'],
            ['assigned', 'Available'],
            ['done', 'Done'],
            ['cancel', 'Cancelled'],
          ),
        },
      },
    },
  ];
  return Object.fromEntries(models.map((m) => [m.name, m]));
}

const sqlTypes: Record<FieldType, string> = {
  integer: 'integer',
  char: 'varchar',
  text: 'text',
  boolean: 'boolean',
  date: 'date',
  datetime: 'timestamp without time zone',
  float: 'double precision',
  monetary: 'numeric',
  selection: 'varchar',
  many2one: 'integer',
  one2many: '',
  many2many: '',
};

/** A model's table and its many2many link tables. */
function tableSql(model: ModelDef, links: Set<string>, ifNotExists = ''): string[] {
  const statements: string[] = [];
  const columns = Object.entries(model.fields)
    .filter(([, f]) => !f.sql && f.type !== 'many2many' && f.type !== 'one2many')
    .map(([name, f]) => {
      if (name === 'id') return 'id serial PRIMARY KEY';
      if (name === 'create_date' || name === 'write_date')
        return `${name} timestamp without time zone DEFAULT (now() at time zone 'UTC')`;
      return `${name} ${sqlTypes[f.type]}${f.required ? ' NOT NULL' : ''}`;
    });
  statements.push(`CREATE TABLE ${ifNotExists}${model.table} (\n  ${columns.join(',\n  ')}\n)`);
  for (const f of Object.values(model.fields)) {
    if (f.link && !links.has(f.link.table)) {
      links.add(f.link.table);
      statements.push(
        `CREATE TABLE ${ifNotExists}${f.link.table} (${f.link.other} integer NOT NULL, ${f.link.column} integer NOT NULL, PRIMARY KEY (${f.link.other}, ${f.link.column}))`,
      );
    }
  }
  return statements;
}

/** The DDL of an Odoo-shaped database for `version` (tables, many2many link tables, indexes). */
export function odooSchemaSql(version: ErpVersion): string {
  const statements: string[] = [];
  const links = new Set<string>();
  for (const model of Object.values(odooModels(version))) statements.push(...tableSql(model, links));
  statements.push('CREATE UNIQUE INDEX res_users_login_key ON res_users (login)');
  statements.push('CREATE UNIQUE INDEX ir_model_data_module_name_uniq_index ON ir_model_data (module, name)');
  statements.push('CREATE INDEX account_move_line_move_id_idx ON account_move_line (move_id)');
  statements.push('CREATE INDEX account_move_move_type_idx ON account_move (move_type, state)');
  statements.push(
    'ALTER TABLE account_bank_statement_line ADD CONSTRAINT account_bank_statement_line_unique_import_id UNIQUE (unique_import_id)',
  );
  // Odoo keeps passwords in a column the ORM never returns through read().
  statements.push('ALTER TABLE res_users ADD COLUMN password varchar');
  statements.push(OAUTH_USERS_SQL);
  statements.push(API_KEYS_TABLE_SQL);
  return statements.map((s) => `${s};`).join('\n');
}

/**
 * Odoo's `res.users.apikeys` table (base/models/res_users.py, `_auto = False` so the key hash is a
 * column the ORM never reads): the first 8 hex digits of the key as `index`, a pbkdf2-sha512 hash
 * of the whole key (6,000 rounds), the expiry. Served by sandbox/erp/apikeys.ts, not the ORM.
 */
const API_KEYS_TABLE_SQL = `CREATE TABLE IF NOT EXISTS res_users_apikeys (
  id serial PRIMARY KEY,
  name varchar NOT NULL,
  user_id integer NOT NULL REFERENCES res_users (id) ON DELETE CASCADE,
  scope varchar,
  expiration_date timestamp without time zone,
  index varchar(8) NOT NULL CHECK (char_length(index) = 8),
  key varchar NOT NULL,
  create_date timestamp without time zone DEFAULT (now() at time zone 'utc')
);
CREATE INDEX IF NOT EXISTS res_users_apikeys_user_id_index_idx ON res_users_apikeys (user_id, index)`;

/**
 * Brings a tenant database cloned from an older template layout up to the current one, as an Odoo
 * module upgrade would (idempotent): the bank import's `unique_import_id`, API keys (layout 7). (Groups and their external
 * ids came with layout 4: a database cloned from an older template is re-created, not upgraded.)
 */
/** auth_oauth's private access-token column (part of the session token) and its uniqueness rule. */
const OAUTH_USERS_SQL = `ALTER TABLE res_users ADD COLUMN IF NOT EXISTS oauth_access_token varchar;
CREATE UNIQUE INDEX IF NOT EXISTS uniq_users_oauth_provider_oauth_uid ON res_users (oauth_provider_id, oauth_uid)`;

export function odooSchemaUpgradeSql(version: ErpVersion): string {
  const models = odooModels(version);
  const links = new Set<string>();
  // layout 8: the models and fields registry, automation rules and server actions, stock moves
  const added = [
    'ir.model',
    'ir.model.fields',
    'base.automation',
    'ir.actions.server',
    'stock.move',
    // layout 9: auth_oauth with OCA auth_oidc
    'auth.oauth.provider',
  ].flatMap((name) => tableSql(models[name]!, links, 'IF NOT EXISTS '));
  return `
ALTER TABLE account_bank_statement_line ADD COLUMN IF NOT EXISTS unique_import_id varchar;
CREATE UNIQUE INDEX IF NOT EXISTS account_bank_statement_line_unique_import_id ON account_bank_statement_line (unique_import_id);
ALTER TABLE res_groups ADD COLUMN IF NOT EXISTS api_key_duration double precision;
ALTER TABLE res_users ADD COLUMN IF NOT EXISTS oauth_provider_id integer;
ALTER TABLE res_users ADD COLUMN IF NOT EXISTS oauth_uid varchar;
${API_KEYS_TABLE_SQL};
${added.join(';\n')};
${OAUTH_USERS_SQL};
${Object.values(models).map(registerModelSql).join(';\n')};
`;
}

const sqlLiteral = (v: string) => `'${v.replace(/'/g, "''")}'`;

/**
 * Idempotent SQL that lists `model` and its fields in `ir.model` / `ir.model.fields`, as Odoo does
 * when the module that brings the model is installed (a model without a module: always).
 */
export function registerModelSql(model: ModelDef): string {
  const name = sqlLiteral(model.name);
  const installed = model.module
    ? ` AND EXISTS (SELECT 1 FROM ir_module_module WHERE name = ${sqlLiteral(model.module)} AND state = 'installed')`
    : '';
  const fields = Object.entries(model.fields)
    .map(([n, f]) => `(${sqlLiteral(n)}, ${sqlLiteral(f.string)}, ${sqlLiteral(f.type)})`)
    .join(', ');
  return `INSERT INTO ir_model (name, model) SELECT ${sqlLiteral(model.description)}, ${name} WHERE NOT EXISTS (SELECT 1 FROM ir_model WHERE model = ${name})${installed};
INSERT INTO ir_model_fields (name, field_description, model, model_id, ttype)
  SELECT v.n, v.d, ${name}, m.id, v.t FROM ir_model m, (VALUES ${fields}) v(n, d, t)
   WHERE m.model = ${name} AND NOT EXISTS (SELECT 1 FROM ir_model_fields f WHERE f.model = ${name} AND f.name = v.n)`;
}

/**
 * `ir.model` and `ir.model.fields` as Odoo fills them from its registry: here, from the definitions
 * above, for the models of the installed modules.
 */
export function irModelRows(
  version: ErpVersion,
  installed: ReadonlySet<string>,
): { ir_model: Record<string, string | number>[]; ir_model_fields: Record<string, string | number>[] } {
  const ir_model: Record<string, string | number>[] = [];
  const ir_model_fields: Record<string, string | number>[] = [];
  Object.values(odooModels(version)).forEach((model, i) => {
    if (model.module && !installed.has(model.module)) return;
    ir_model.push({ id: i + 1, name: model.description, model: model.name });
    for (const [name, field] of Object.entries(model.fields)) {
      ir_model_fields.push({
        id: ir_model_fields.length + 1,
        name,
        field_description: field.string,
        model: model.name,
        model_id: i + 1,
        ttype: field.type,
      });
    }
  });
  return { ir_model, ir_model_fields };
}
