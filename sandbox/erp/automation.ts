/**
 * The stand-in's Odoo automation rules (`base_automation`, trigger "On save", with the server action
 * "Send Webhook Notification"), read from the tenant database where provisioning made them
 * (domain/erp-events/automation-rules.ts), and run as Odoo 18 runs them (addons/base_automation/models/
 * base_automation.py `_register_hook`, odoo/addons/base/models/ir_actions.py `_run_action_webhook`):
 * - a write: the records matching the rule's pre-domain before the write, then its domain after;
 *   a create: the new records matching its domain (no pre-domain);
 * - for each record, a POST of `{_model, _id, _action: "<action name>(#<action id>)", <the action's
 *   webhook fields read with load=None>}` (sorted keys, `Content-Type: application/json`, nothing
 *   else), the URL's userinfo sent as Basic auth as Python's `requests` does, a 1 s timeout, and
 *   any failure only logged: the write succeeds whatever the receiver does.
 * Only rules whose domains are Python literals (lists, tuples, strings, numbers, True/False/None)
 * are understood, which is what the platform writes; a rule the stand-in cannot read is logged
 * and skipped. The base_automation module must be installed, as in Odoo.
 */
import type pg from 'pg';
import type { ModelDef } from './models.js';
import { SqlBuilder } from './domain.js';

export interface WebhookRule {
  ruleId: number;
  actionId: number;
  actionName: string;
  preDomain: unknown[] | null;
  domain: unknown[] | null;
  url: string;
  fields: string[];
}

/** A Python literal (as `safe_eval` would read a domain) as JSON; throws on anything else. */
export function pythonLiteral(text: string): unknown {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')';
      i++;
      const items: unknown[] = [];
      ws();
      while (text[i] !== close) {
        items.push(value());
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== close) throw new Error(`expected , or ${close} at ${i}`);
        ws();
      }
      i++;
      return items;
    }
    if (c === "'" || c === '"') {
      let out = '';
      i++;
      while (text[i] !== c) {
        if (i >= text.length) throw new Error('unterminated string');
        if (text[i] === '\\') i++;
        out += text[i++];
      }
      i++;
      return out;
    }
    const word = /^(True|False|None|-?\d+(\.\d+)?)/.exec(text.slice(i));
    if (!word) throw new Error(`unexpected ${JSON.stringify(text.slice(i, i + 10))}`);
    i += word[0].length;
    return word[0] === 'True' ? true : word[0] === 'False' ? false : word[0] === 'None' ? null : Number(word[0]);
  };
  const result = value();
  ws();
  if (i !== text.length) throw new Error(`trailing text at ${i}`);
  return result;
}

const domainOf = (text: string | null): unknown[] | null => {
  if (!text) return null;
  const parsed = pythonLiteral(text);
  if (!Array.isArray(parsed)) throw new Error('a domain is a list');
  return parsed;
};

/** The active "On save" webhook rules on `model` (none when base_automation is not installed). */
export async function webhookRules(
  db: pg.Pool | pg.PoolClient,
  model: string,
  warn: (msg: string) => void,
): Promise<WebhookRule[]> {
  const { rows } = await db.query<{
    rule_id: number;
    action_id: number;
    action_name: string;
    pre: string | null;
    post: string | null;
    url: string | null;
    fields: string[];
  }>(
    `SELECT a.id AS rule_id, s.id AS action_id, s.name AS action_name, a.filter_pre_domain AS pre, a.filter_domain AS post, s.webhook_url AS url,
            ARRAY(SELECT f.name FROM ir_act_server_webhook_field_rel r JOIN ir_model_fields f ON f.id = r.field_id WHERE r.server_id = s.id ORDER BY f.name) AS fields
       FROM base_automation a
       JOIN ir_model m ON m.id = a.model_id
       JOIN ir_act_server s ON s.base_automation_id = a.id AND s.state = 'webhook'
      WHERE m.model = $1 AND a.active AND a.trigger = 'on_create_or_write'
        AND EXISTS (SELECT 1 FROM ir_module_module WHERE name = 'base_automation' AND state = 'installed')
      ORDER BY a.id, s.id`,
    [model],
  );
  const rules: WebhookRule[] = [];
  for (const r of rows) {
    try {
      if (!r.url) throw new Error('no URL');
      rules.push({
        ruleId: r.rule_id,
        actionId: r.action_id,
        actionName: r.action_name,
        preDomain: domainOf(r.pre),
        domain: domainOf(r.post),
        url: r.url,
        fields: r.fields,
      });
    } catch (err) {
      warn(`automation rule #${r.rule_id} skipped: ${(err as Error).message}`);
    }
  }
  return rules;
}

/** The ids among `ids` that match `domain` (all of them without a domain), as the superuser. */
export async function matching(
  db: pg.Pool | pg.PoolClient,
  models: Record<string, ModelDef>,
  model: ModelDef,
  ids: number[],
  domain: unknown[] | null,
): Promise<number[]> {
  if (!ids.length) return [];
  const b = new SqlBuilder(models);
  const where = b.where(model, domain ?? []);
  const { rows } = await db.query<{ id: number }>(
    `SELECT id FROM ${model.table} t WHERE id = ANY(${b.param(ids)}) AND ${where} ORDER BY id`,
    b.params,
  );
  return rows.map((r) => r.id);
}

/** What `record.read(fields, load=None)` gives: a many2one is its id, not `[id, name]`. */
export function loadNone(model: ModelDef, row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(row).map(([name, value]) => [
      name,
      model.fields[name]?.type === 'many2one' && Array.isArray(value) ? value[0] : value,
    ]),
  );
}

/** Odoo's `json.dumps(vals, sort_keys=True, default=str)`: Python's separators, ASCII only. */
export function pythonJson(value: unknown): string {
  if (value instanceof Date) return pythonJson(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    return `{${Object.keys(obj)
      .sort()
      .map((k) => `${pythonJson(k)}: ${pythonJson(obj[k])}`)
      .join(', ')}}`;
  }
  return (JSON.stringify(value ?? null) ?? 'null').replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** `requests.post(url, data=…, headers={'Content-Type': 'application/json'}, timeout=1)`; failures only logged. */
export async function postWebhook(url: string, body: string, warn: (msg: string) => void): Promise<void> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    warn(`webhook URL not valid: ${url.replace(/\/\/[^@/]*@/, '//***@')}`);
    return;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.username || target.password) {
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')}`;
    target.username = '';
    target.password = '';
  }
  try {
    const res = await fetch(target, { method: 'POST', headers, body, signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    if (res.status >= 400) warn(`Webhook call failed: ${res.status} for ${target.pathname}`);
  } catch (err) {
    warn(
      (err as Error).name === 'TimeoutError'
        ? 'Webhook call timed out after 1s - it may or may not have failed.'
        : `Webhook call failed: ${(err as Error).message}`,
    );
  }
}
