/**
 * The tenant ERP's automation rules that post record changes to the platform ("Where
 * events come from" in the docs): Odoo's own `base_automation` rules with the server action "Send Webhook
 * Notification" (`ir.actions.server`, state `webhook`), made through Odoo's models in the admin's
 * web session like the tier modules (tier-modules.ts), one rule per event type:
 *
 *   invoice.posted    account.move  state becomes posted (customer invoices and credit notes)
 *   payment.received  account.move  payment_state becomes paid or in_payment (idem)
 *   stock.changed     stock.move    state becomes done (only where the stock module is installed)
 *
 * What Odoo sends (odoo/addons/base/models/ir_actions.py `_run_action_webhook`, 17–19): a POST of
 * `{_model, _id, _action, <the action's webhook fields read with load=None>}` with no headers of
 * ours, fire-and-forget with a 1 s timeout, from inside the transaction that made the change. So:
 * - the tenant's ingestion token rides in the URL's userinfo (`https://<tenant>:<token>@…`), which
 *   Python's `requests` sends as `Authorization: Basic`; the event type is in the path
 *   (`/api/v1/ingest/odoo/<tenant>/<type>`), the event id is derived from model, id and the new
 *   state, so a change posted twice is one event;
 * - a post the platform missed is not retried by Odoo: the sweep (erp-events-sweep) reads what
 *   changed and posts the same events again (ids make them duplicates when they had arrived).
 *
 * The rules are found again by name and brought to what they must be (URL, domains, fields) on
 * every reconcile, so a moved events service or a new token reaches existing tenants.
 */
import type { ErpSession } from '../erp/client.js';
import { ingestionToken, type ErpEventType } from './ingestion.js';

export const RULE_PREFIX = 'Plana: ';

export interface EventRuleDef {
  type: ErpEventType;
  model: string;
  /** Python literal domains, as Odoo stores them. */
  preDomain: string;
  domain: string;
  /** Read with load=None into the payload. */
  fields: string[];
}

const CUSTOMER_MOVES = "('move_type', 'in', ['out_invoice', 'out_refund'])";
const MOVE_FIELDS = [
  'name',
  'move_type',
  'partner_id',
  'amount_total',
  'amount_residual',
  'currency_id',
  'invoice_date',
  'payment_state',
  'state',
];

export const EVENT_RULES: readonly EventRuleDef[] = [
  {
    type: 'invoice.posted',
    model: 'account.move',
    preDomain: "[('state', '!=', 'posted')]",
    domain: `[('state', '=', 'posted'), ${CUSTOMER_MOVES}]`,
    fields: MOVE_FIELDS,
  },
  {
    type: 'payment.received',
    model: 'account.move',
    preDomain: "[('payment_state', 'not in', ['paid', 'in_payment'])]",
    domain: `[('payment_state', 'in', ['paid', 'in_payment']), ${CUSTOMER_MOVES}]`,
    fields: MOVE_FIELDS,
  },
  {
    type: 'stock.changed',
    model: 'stock.move',
    preDomain: "[('state', '!=', 'done')]",
    domain: "[('state', '=', 'done')]",
    fields: [
      'reference',
      'product_id',
      'product_uom_qty',
      'quantity',
      'location_id',
      'location_dest_id',
      'date',
      'state',
    ],
  },
];

/** Where a tenant's ERP posts events of `type`, its token in the userinfo (see above). */
export function eventRuleUrl(eventsUrl: string, ingestionKey: string, tenant: string, type: ErpEventType): string {
  const url = new URL(`/api/v1/ingest/odoo/${tenant}/${type}`, eventsUrl);
  url.username = tenant;
  url.password = ingestionToken(ingestionKey, tenant);
  return url.toString();
}

export interface EventRulesResult {
  /** Rules made by this call, by event type. */
  created: string[];
  /** Rules that were there but had to be brought back (URL, domains, fields, archived). */
  updated: string[];
  /** Rules already as they must be. */
  unchanged: string[];
  /** Event types whose model this ERP does not have (e.g. stock.move without the stock module). */
  skipped: string[];
}

interface RuleRow {
  id: number;
  name: string;
  active: boolean;
  trigger: string;
  filter_pre_domain: string | false;
  filter_domain: string | false;
  action_server_ids: number[];
}
interface ActionRow {
  id: number;
  state: string;
  webhook_url: string | false;
  webhook_field_ids: number[];
}

/** Makes or repairs the event rules in a tenant ERP (needs the base_automation module installed). */
export async function ensureEventRules(
  admin: ErpSession,
  opts: { tenant: string; eventsUrl: string; ingestionKey: string },
): Promise<EventRulesResult> {
  const result: EventRulesResult = { created: [], updated: [], unchanged: [], skipped: [] };
  const erp = await readRulesInErp(admin);
  for (const def of EVENT_RULES) result[await ensureRule(admin, erp, def, opts)].push(def.type);
  return result;
}

/** What the rules are made of in this ERP: model and field ids by name, and the rules there already. */
interface RulesInErp {
  modelId: Map<string, number>;
  /** By `<model>.<field>`. */
  fieldId: Map<string, number>;
  existing: RuleRow[];
}

async function readRulesInErp(admin: ErpSession): Promise<RulesInErp> {
  const modelNames = [...new Set(EVENT_RULES.map((r) => r.model))];
  const models = await admin.callKw<{ id: number; model: string }[]>(
    'ir.model',
    'search_read',
    [[['model', 'in', modelNames]]],
    { fields: ['model'] },
  );
  const fieldNames = [...new Set(EVENT_RULES.flatMap((r) => r.fields))];
  const fieldRows = await admin.callKw<{ id: number; name: string; model: string }[]>(
    'ir.model.fields',
    'search_read',
    [
      [
        ['model', 'in', modelNames],
        ['name', 'in', fieldNames],
      ],
    ],
    { fields: ['name', 'model'] },
  );
  const existing = await admin.callKw<RuleRow[]>(
    'base.automation',
    'search_read',
    [
      [
        ['name', '=like', `${RULE_PREFIX}%`],
        ['active', 'in', [true, false]],
      ],
    ],
    { fields: ['name', 'active', 'trigger', 'filter_pre_domain', 'filter_domain', 'action_server_ids'] },
  );
  return {
    modelId: new Map(models.map((m) => [m.model, m.id])),
    fieldId: new Map(fieldRows.map((f) => [`${f.model}.${f.name}`, f.id])),
    existing,
  };
}

/** The rule's webhook action as it must be. */
interface WebhookAction {
  name: string;
  model_id: number;
  state: 'webhook';
  usage: 'base_automation';
  webhook_url: string;
  webhook_field_ids: [[6, 0, number[]]];
}

/** One event type's rule: made, repaired, left as it is, or skipped when the ERP has not its model. */
async function ensureRule(
  admin: ErpSession,
  erp: RulesInErp,
  def: EventRuleDef,
  opts: { tenant: string; eventsUrl: string; ingestionKey: string },
): Promise<keyof EventRulesResult> {
  const model = erp.modelId.get(def.model);
  if (model === undefined) return 'skipped';
  const name = `${RULE_PREFIX}${def.type}`;
  const fields = def.fields
    .map((f) => erp.fieldId.get(`${def.model}.${f}`))
    .filter((id): id is number => id !== undefined)
    .sort((a, b) => a - b);
  const action: WebhookAction = {
    name: `Post ${def.type} to the platform`,
    model_id: model,
    state: 'webhook',
    usage: 'base_automation',
    webhook_url: eventRuleUrl(opts.eventsUrl, opts.ingestionKey, opts.tenant, def.type),
    webhook_field_ids: [[6, 0, fields]],
  };
  const rule = erp.existing.find((r) => r.name === name);
  if (!rule) {
    const id = await admin.callKw<number>('base.automation', 'create', [
      {
        name,
        model_id: model,
        trigger: 'on_create_or_write',
        filter_pre_domain: def.preDomain,
        filter_domain: def.domain,
        active: true,
      },
    ]);
    await admin.callKw('ir.actions.server', 'create', [{ ...action, base_automation_id: id }]);
    return 'created';
  }
  const ruleChanged = await repairTrigger(admin, rule, def);
  const actionChanged = await repairWebhook(admin, rule, action);
  return ruleChanged || actionChanged ? 'updated' : 'unchanged';
}

/** Brings the rule's trigger and domains back (and unarchives it); answers whether it changed. */
async function repairTrigger(admin: ErpSession, rule: RuleRow, def: EventRuleDef): Promise<boolean> {
  if (
    rule.active &&
    rule.trigger === 'on_create_or_write' &&
    rule.filter_pre_domain === def.preDomain &&
    rule.filter_domain === def.domain
  )
    return false;
  await admin.callKw('base.automation', 'write', [
    [rule.id],
    { active: true, trigger: 'on_create_or_write', filter_pre_domain: def.preDomain, filter_domain: def.domain },
  ]);
  return true;
}

/** Brings the rule's webhook action back (made anew when missing; its URL and fields); answers whether it changed. */
async function repairWebhook(admin: ErpSession, rule: RuleRow, action: WebhookAction): Promise<boolean> {
  const actions = rule.action_server_ids.length
    ? await admin.callKw<ActionRow[]>('ir.actions.server', 'read', [
        rule.action_server_ids,
        ['state', 'webhook_url', 'webhook_field_ids'],
      ])
    : [];
  const webhook = actions.find((a) => a.state === 'webhook');
  if (!webhook) {
    await admin.callKw('ir.actions.server', 'create', [{ ...action, base_automation_id: rule.id }]);
    return true;
  }
  const fields = action.webhook_field_ids[0][2];
  const url = action.webhook_url;
  if (webhook.webhook_url === url && [...webhook.webhook_field_ids].sort((a, b) => a - b).join() === fields.join())
    return false;
  await admin.callKw('ir.actions.server', 'write', [
    [webhook.id],
    { webhook_url: url, webhook_field_ids: [[6, 0, fields]] },
  ]);
  return true;
}

/** One line for the step's detail in the workflow history (never the URL: it holds the token). */
export function eventRulesSummary(r: EventRulesResult): string {
  const parts: string[] = [];
  if (r.created.length) parts.push(`made ${r.created.join(', ')}`);
  if (r.updated.length) parts.push(`repaired ${r.updated.join(', ')}`);
  if (r.unchanged.length) parts.push(`${r.unchanged.length} in place`);
  if (r.skipped.length) parts.push(`no model for ${r.skipped.join(', ')}`);
  return `event rules: ${parts.join('; ')}`;
}
