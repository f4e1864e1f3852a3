/** The state of each integration of the workspace: ERP, bank consents, webhooks, agents. */
import { api, call } from '../api/client';
import { Empty, ErrorMessage, Loading, useLoad } from '../components';
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
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v !== 'object')) return value.join(', ');
  return undefined;
}
/** failedDeliveries24h → Failed deliveries 24h */
const label = (key: string) =>
  key
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/([A-Za-z])(\d)/g, '$1 $2')
    .toLowerCase()
    .replace(/^./, (c) => c.toUpperCase());
/** Where the portal manages an integration (admins' pages only for admins). */
const PAGES: Record<string, { path: string; text: string; adminOnly: boolean }> = {
  erp: { path: '', text: 'Open the dashboard', adminOnly: false },
  webhooks: { path: 'webhooks', text: 'Manage webhooks', adminOnly: true },
  agents: { path: 'keys', text: 'Create a key with agents:invoke', adminOnly: true },
};

export function Integrations({ workspace }: { workspace: WorkspaceRef }) {
  const list = useLoad(() => call(() => api.GET('/api/portal/integrations', { params: { query: { workspace: workspace.slug } } })), [workspace.slug]);
  return (
    <>
      <h1>Integrations</h1>
      {list.loading && !list.data ? (
        <Loading what="integrations" />
      ) : list.error ? (
        <ErrorMessage error={list.error} />
      ) : !list.data || list.data.items.length === 0 ? (
        <Empty>No integrations are available.</Empty>
      ) : (
        <div className="cards">
          {list.data.items.map((i) => {
            const state = STATE[i.state] ?? { text: i.state, tone: '' };
            const details = Object.entries(i.details).flatMap(([k, v]) => {
              const text = show(v);
              return text === undefined ? [] : [[k, text] as const];
            });
            return (
              <section key={i.id} className="card" aria-labelledby={`integration-${i.id}`} data-integration={i.id}>
                <div className="page-head">
                  <h2 id={`integration-${i.id}`}>{i.name}</h2>
                  <span className={`badge ${state.tone}`}>{state.text}</span>
                </div>
                <p>{i.summary}</p>
                {PAGES[i.id] && (!PAGES[i.id]!.adminOnly || workspace.role === 'admin') && (
                  <p>
                    <Link to={`w/${workspace.slug}/${PAGES[i.id]!.path}`}>{PAGES[i.id]!.text}</Link>
                  </p>
                )}
                {details.length > 0 && (
                  <dl className="facts small">
                    {details.map(([k, v]) => (
                      <div key={k}>
                        <dt>{label(k)}</dt>
                        <dd>{v}</dd>
                      </div>
                    ))}
                  </dl>
                )}
              </section>
            );
          })}
        </div>
      )}
    </>
  );
}
