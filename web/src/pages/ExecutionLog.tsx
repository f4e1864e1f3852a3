/** The workspace's execution log (admins): every call made with its keys, filterable, newest first. */
import { Fragment, useState, type FormEvent } from 'react';
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorMessage, Loaded, numeric, Table } from '../components';
import { formatDate, isoOf } from '../format';
import { useLoad } from '../hooks';
import type { WorkspaceRef } from '../nav';

type Query = NonNullable<paths['/api/portal/execution-log']['get']['parameters']['query']>;
type Filter = Pick<Query, 'keyPrefix' | 'route' | 'status' | 'since' | 'until'>;
type Row =
  paths['/api/portal/execution-log']['get']['responses']['200']['content']['application/json']['items'][number];

/** The log's first page for the filter, then older pages on `loadMore` while there is a cursor. */
function useExecutionLog(workspace: WorkspaceRef, filter: Filter) {
  const [more, setMore] = useState<{ rows: Row[]; cursor: string | null; error?: unknown }>();
  const fetchPage = (cursor?: string) =>
    call(() =>
      api.GET('/api/portal/execution-log', {
        params: { query: { workspace: workspace.slug, limit: 50, ...filter, ...(cursor ? { cursor } : {}) } },
      }),
    );
  const first = useLoad(async () => {
    setMore(undefined);
    return fetchPage();
  }, [workspace.slug, filter]);
  const rows = [...(first.data?.items ?? []), ...(more?.rows ?? [])];
  const cursor = more ? more.cursor : first.data?.nextCursor;

  async function loadMore() {
    try {
      const next = await fetchPage(cursor!);
      setMore({ rows: [...(more?.rows ?? []), ...next.items], cursor: next.nextCursor });
    } catch (error) {
      setMore({ rows: more?.rows ?? [], cursor: cursor ?? null, error });
    }
  }
  return { first, rows, cursor, loadMoreError: more?.error, loadMore };
}

/** The filter form's fields → the log's filter (empty fields filter nothing). */
function filterOf(f: FormData): Filter {
  const text = (name: string) => String(f.get(name) ?? '').trim() || undefined;
  const status = text('status');
  return {
    keyPrefix: text('keyPrefix'),
    route: text('route'),
    status: status ? Number(status) : undefined,
    since: isoOf(f.get('since')),
    until: isoOf(f.get('until')),
  };
}

export function ExecutionLog({ workspace }: { workspace: WorkspaceRef }) {
  const [filter, setFilter] = useState<Filter>({});
  const log = useExecutionLog(workspace, filter);
  const filtered = Object.values(filter).some((v) => v !== undefined);

  return (
    <>
      <h1>Execution log</h1>
      <p className="muted">Every call made with this workspace’s API keys, newest first (kept 90 days).</p>
      <LogFilters onApply={(f) => setFilter(filterOf(f))} />
      <Loaded
        state={log.first}
        what="the execution log"
        empty={`No calls ${filtered ? 'match these filters' : 'have been made with this workspace’s keys yet'}.`}
        isEmpty={() => log.rows.length === 0}
      >
        {() => <LogTable rows={log.rows} />}
      </Loaded>
      <ErrorMessage error={log.loadMoreError} />
      {log.cursor && (
        <button type="button" className="secondary" onClick={() => void log.loadMore()}>
          Load older calls
        </button>
      )}
    </>
  );
}

function LogFilters({ onApply }: { onApply: (form: FormData) => void }) {
  function apply(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    onApply(new FormData(e.currentTarget));
  }
  return (
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
  );
}

/** A route that may break onto more lines after each slash (and nowhere inside a segment). */
const breakAfterSlashes = (route: string) =>
  route.split('/').map((part, i) => (
    <Fragment key={i}>
      {i > 0 && (
        <>
          /<wbr />
        </>
      )}
      {part}
    </Fragment>
  ));

/** The calls: the route and the request id wrap, so every column fits the page (a long one still scrolls in its box). */
function LogTable({ rows }: { rows: Row[] }) {
  return (
    <Table columns={['Time', 'Key', 'Call', numeric('Status'), numeric('Latency'), 'Request id']}>
      {rows.map((r) => (
        <tr key={r.id}>
          <td>{formatDate(r.occurredAt)}</td>
          <td>
            <code>{r.keyPrefix}</code>
          </td>
          <td className="soft-wrap">
            {r.method} <code>{breakAfterSlashes(r.route)}</code>
          </td>
          <td className={`num status s${String(r.status)[0]}`}>{r.status}</td>
          <td className="num">{r.latencyMs.toFixed(1)} ms</td>
          <td className="soft-wrap muted small">{r.requestId}</td>
        </tr>
      ))}
    </Table>
  );
}
