/** The state of each integration of the workspace: ERP, bank consents, webhooks, agents. */
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { Loaded } from '../components';
import { formatDate } from '../format';
import { useLoad } from '../hooks';
import type { WorkspaceRef } from '../nav';
import { Link } from '../router';

const STATE: Record<string, { text: string; tone: string }> = {
  connected: { text: 'Connected', tone: 'ok' },
  pending: { text: 'Pending', tone: 'warn' },
  degraded: { text: 'Needs attention', tone: 'bad' },
  disconnected: { text: 'Disconnected', tone: 'bad' },
  'not-configured': { text: 'Not set up', tone: '' },
};

/** A detail's value as text: scalars as they are, lists joined, anything else left out. */
function show(value: unknown): string | undefined {
  if (value === null || value === undefined || value === '') return undefined;
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v !== 'object')) return value.join(', ');
  return undefined;
}

/** "3 valid, 1 expired" from { valid: 3, expired: 1 }; nothing for no counts. */
const counts = (value: unknown) => {
  const entries = Object.entries((value ?? {}) as Record<string, number>).filter(([, n]) => typeof n === 'number');
  return entries.length ? entries.map(([k, n]) => `${n} ${k}`).join(', ') : undefined;
};

/**
 * How the portal shows the details the providers report (domain/integrations): a label for each,
 * and a value in words where the raw one says little. Null: kept out of the facts (shown apart, or
 * folded into another one). A key not listed here gets its name spelt out (failedDeliveries24h →
 * Failed deliveries 24h).
 */
const DETAILS: Record<
  string,
  { label: string; value?: (v: unknown, all: Record<string, unknown>) => string | undefined } | null
> = {
  tenant: { label: 'Tenant' },
  tier: { label: 'Plan', value: (v) => (typeof v === 'string' ? v.charAt(0).toUpperCase() + v.slice(1) : undefined) },
  erpVersion: { label: 'ERP version' },
  host: { label: 'Address' },
  dashboardUser: { label: 'Dashboard access', value: (v) => (v ? 'Set up' : 'Not set up yet') },
  phase: { label: 'Phase' },
  generation: {
    label: 'Configuration',
    value: (v, all) =>
      typeof v !== 'number'
        ? undefined
        : all.observedGeneration === v
          ? 'Applied'
          : `Being applied (version ${v}; version ${String(all.observedGeneration ?? 0)} is live)`,
  },
  observedGeneration: null,
  conditions: null,
  consents: { label: 'Consents', value: counts },
  enabledEndpoints: { label: 'Enabled endpoints' },
  disabledEndpoints: { label: 'Disabled endpoints' },
  failedDeliveries24h: { label: 'Failed deliveries (last 24 h)' },
  executions7d: { label: 'Calls (last 7 days)' },
  failed7d: { label: 'Failed calls (last 7 days)' },
  lastUsedAt: { label: 'Last used', value: (v) => (typeof v === 'string' ? formatDate(v) : undefined) },
};
const spelt = (key: string) =>
  key
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/([A-Za-z])(\d)/g, '$1 $2')
    .toLowerCase()
    .replace(/^./, (c) => c.toUpperCase());

/** The facts of a card, in the provider's order, labelled. */
function facts(details: Record<string, unknown>): [string, string][] {
  return Object.entries(details).flatMap(([key, raw]) => {
    const how = DETAILS[key];
    if (how === null) return [];
    const text = how?.value ? how.value(raw, details) : show(raw);
    return text === undefined ? [] : [[how?.label ?? spelt(key), text] as [string, string]];
  });
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/** The ERP tenant's conditions (Synced, Ready) as its provisioning reports them, or a sentence saying there are none and why. */
function Conditions({ details }: { details: Record<string, unknown> }) {
  const list = Array.isArray(details.conditions) ? (details.conditions as Condition[]) : [];
  if (list.length === 0)
    return (
      <p className="muted small" data-conditions="none">
        {details.phase
          ? 'The provisioning has not reported any condition yet.'
          : 'No provisioning conditions: this tenant was set up without a TenantClient, so only its route is known.'}
      </p>
    );
  return (
    <>
      <h3 className="small">Conditions</h3>
      <ul className="conditions small">
        {list.map((c) => (
          <li key={c.type} data-condition={c.type}>
            <span className={`badge ${c.status === 'True' ? 'ok' : c.status === 'False' ? 'bad' : 'warn'}`}>
              {c.type}: {c.status === 'True' ? 'yes' : c.status === 'False' ? 'no' : 'unknown'}
            </span>{' '}
            {[c.reason, c.message].filter(Boolean).join(' — ')}
            {c.lastTransitionTime && <span className="muted"> (since {formatDate(c.lastTransitionTime)})</span>}
          </li>
        ))}
      </ul>
    </>
  );
}

/** Where the portal manages an integration (admins' pages only for admins). */
const PAGES: Record<string, { path: string; text: string; adminOnly: boolean }> = {
  erp: { path: '', text: 'Open the dashboard', adminOnly: false },
  webhooks: { path: 'webhooks', text: 'Manage webhooks', adminOnly: true },
  agents: { path: 'keys', text: 'Create a key with agents:invoke', adminOnly: true },
};

type Integration =
  paths['/api/portal/integrations']['get']['responses']['200']['content']['application/json']['items'][number];

export function Integrations({ workspace }: { workspace: WorkspaceRef }) {
  const list = useLoad(
    () => call(() => api.GET('/api/portal/integrations', { params: { query: { workspace: workspace.slug } } })),
    [workspace.slug],
  );
  return (
    <>
      <h1>Integrations</h1>
      <Loaded
        state={list}
        what="integrations"
        empty="No integrations are available."
        isEmpty={(d) => d.items.length === 0}
      >
        {(d) => (
          <div className="cards">
            {d.items.map((i) => (
              <IntegrationCard key={i.id} workspace={workspace} integration={i} />
            ))}
          </div>
        )}
      </Loaded>
    </>
  );
}

/** One integration: its state, what it says, where the portal manages it, its facts (and the ERP's conditions). */
function IntegrationCard({ workspace, integration: i }: { workspace: WorkspaceRef; integration: Integration }) {
  const state = STATE[i.state] ?? { text: i.state, tone: '' };
  const details = facts(i.details);
  const page = PAGES[i.id];
  return (
    <section className="card" aria-labelledby={`integration-${i.id}`} data-integration={i.id}>
      <div className="page-head">
        <h2 id={`integration-${i.id}`}>{i.name}</h2>
        <span className={`badge ${state.tone}`}>{state.text}</span>
      </div>
      <p>{i.summary}</p>
      {page && (!page.adminOnly || workspace.role === 'admin') && (
        <p>
          <Link to={`w/${workspace.slug}/${page.path}`}>{page.text}</Link>
        </p>
      )}
      {details.length > 0 && (
        <dl className="facts small">
          {details.map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
      )}
      {i.id === 'erp' && i.state !== 'not-configured' && <Conditions details={i.details} />}
    </section>
  );
}
