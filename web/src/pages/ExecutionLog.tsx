/** The workspace's execution log (admins): every call made with its keys, filterable, newest first. */
import { useState, type FormEvent } from 'react';
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { Empty, ErrorMessage, Loading, TableWrap, formatDate, useLoad } from '../components';
import type { WorkspaceRef } from '../nav';

type Query = NonNullable<paths['/api/portal/execution-log']['get']['parameters']['query']>;
type Filter = Pick<Query, 'keyPrefix' | 'route' | 'status' | 'since' | 'until'>;
type Row = paths['/api/portal/execution-log']['get']['responses']['200']['content']['application/json']['items'][number];

/** datetime-local (the browser's local time) → ISO 8601 */
const isoOf = (local: FormDataEntryValue | null) => (local ? new Date(String(local)).toISOString() : undefined);

export function ExecutionLog({ workspace }: { workspace: WorkspaceRef }) {
  const [filter, setFilter] = useState<Filter>({});
  const [more, setMore] = useState<{ rows: Row[]; cursor: string | null; error?: unknown }>();
  const page = useLoad(async () => {
    setMore(undefined);
    return call(() => api.GET('/api/portal/execution-log', { params: { query: { workspace: workspace.slug, limit: 50, ...filter } } }));
  }, [workspace.slug, filter]);
  const rows = [...(page.data?.items ?? []), ...(more?.rows ?? [])];
  const cursor = more ? more.cursor : page.data?.nextCursor;

  function apply(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const text = (name: string) => String(f.get(name) ?? '').trim() || undefined;
    const status = text('status');
    setFilter({ keyPrefix: text('keyPrefix'), route: text('route'), status: status ? Number(status) : undefined, since: isoOf(f.get('since')), until: isoOf(f.get('until')) });
  }
  async function loadMore() {
    try {
      const next = await call(() => api.GET('/api/portal/execution-log', { params: { query: { workspace: workspace.slug, limit: 50, ...filter, cursor: cursor! } } }));
      setMore({ rows: [...(more?.rows ?? []), ...next.items], cursor: next.nextCursor });
    } catch (error) {
      setMore({ rows: more?.rows ?? [], cursor: cursor ?? null, error });
    }
  }

  return (
    <>
      <h1>Execution log</h1>
      <p className="muted">Every call made with this workspace’s API keys, newest first (kept 90 days).</p>
      <form className="filters" onSubmit={apply} aria-label="Filter the log">
        <label>
          Key prefix
          <input name="keyPrefix" placeholder="ws_live_…" maxLength={40} />
        </label>
        <label>
          Route contains
          <input name="route" placeholder="/kpis" maxLength={200} />
        </label>
        <label>
          Status
          <input name="status" type="number" min={100} max={599} placeholder="e.g. 403" />
        </label>
        <label>
          From
          <input name="since" type="datetime-local" />
        </label>
        <label>
          Until
          <input name="until" type="datetime-local" />
        </label>
        <button type="submit">Filter</button>
      </form>
      {page.loading && !page.data ? (
        <Loading what="the execution log" />
      ) : page.error ? (
        <ErrorMessage error={page.error} />
      ) : rows.length === 0 ? (
        <Empty>No calls {Object.values(filter).some((v) => v !== undefined) ? 'match these filters' : 'have been made with this workspace’s keys yet'}.</Empty>
      ) : (
        <TableWrap>
          <table className="table">
            <thead>
              <tr>
                <th>Time</th>
                <th>Key</th>
                <th>Call</th>
                <th className="num">Status</th>
                <th className="num">Latency</th>
                <th>Request id</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id}>
                  <td>{formatDate(r.occurredAt)}</td>
                  <td>
                    <code>{r.keyPrefix}</code>
                  </td>
                  <td>
                    {r.method} <code>{r.route}</code>
                  </td>
                  <td className={`num status s${String(r.status)[0]}`}>{r.status}</td>
                  <td className="num">{r.latencyMs.toFixed(1)} ms</td>
                  <td className="muted small">{r.requestId}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <ErrorMessage error={more?.error} />
      {cursor && (
        <button type="button" className="secondary" onClick={() => void loadMore()}>
          Load older calls
        </button>
      )}
    </>
  );
}
