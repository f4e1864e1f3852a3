/**
 * The workspace's webhooks (admins), after the Svix App Portal: endpoints (URL, event types,
 * enabled, or disabled with the reason), create / edit / delete, the signing secret revealed on
 * demand and rotated, a test event, the attempts of each message (time, status, duration, response
 * excerpt), replay of one message or of every failed one in a time range.
 */
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { api, call, inWorkspace } from '../api/client';
import type { paths } from '../api/schema';
import { Dialog, Empty, ErrorMessage, Loading, TableWrap, formatDate, useAction, useLoad } from '../components';
import type { WorkspaceRef } from '../nav';
import { Link, navigate } from '../router';

type Endpoint = paths['/api/portal/webhooks']['get']['responses']['200']['content']['application/json']['endpoints'][number];
type Attempt = paths['/api/portal/webhooks/{id}/attempts']['get']['responses']['200']['content']['application/json']['attempts'][number];
type Secrets = paths['/api/portal/webhooks/{id}/secret']['get']['responses']['200']['content']['application/json'];
type Body = NonNullable<paths['/api/portal/webhooks']['post']['requestBody']>['content']['application/json'];

/** datetime-local (the browser's local time) → ISO 8601 */
const isoOf = (local: FormDataEntryValue | null) => (local ? new Date(String(local)).toISOString() : undefined);
/** "a, b c" → ['a', 'b', 'c']; nothing → null (every event type) */
const typesOf = (text: string) => {
  const types = [...new Set(text.split(/[\s,]+/).filter(Boolean))];
  return types.length ? types : null;
};

function EndpointState({ endpoint }: { endpoint: Endpoint }) {
  if (!endpoint.enabled)
    return (
      <span className="badge bad">
        Disabled{endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}
      </span>
    );
  if (endpoint.failingSince) return <span className="badge warn">Failing since {formatDate(endpoint.failingSince)}</span>;
  return <span className="badge ok">Enabled</span>;
}

/** The list's address, and an endpoint's page (its own address: a reload or a link opens it). */
const listPath = (workspace: WorkspaceRef) => `w/${workspace.slug}/webhooks`;
const endpointPath = (workspace: WorkspaceRef, id: string) => `${listPath(workspace)}/${encodeURIComponent(id)}`;

/** `subpath`: '' for the list, an endpoint's id for its page. */
export function Webhooks({ workspace, subpath }: { workspace: WorkspaceRef; subpath: string }) {
  const endpoints = useLoad(() => call(() => api.GET('/api/portal/webhooks', inWorkspace(workspace.slug))), [workspace.slug]);
  const [editing, setEditing] = useState<Endpoint | 'new'>();
  const openId = subpath ? decodeURIComponent(subpath) : undefined;
  const open = endpoints.data?.endpoints.find((e) => e.id === openId);
  // back on the list from an endpoint (the menu, the back link, the browser's back button): show it as it is now
  const shown = useRef(openId);
  useEffect(() => {
    if (shown.current && !openId) endpoints.reload();
    shown.current = openId;
  }, [openId]);

  if (openId) {
    if (open) return <EndpointView workspace={workspace} endpoint={open} onChanged={endpoints.reload} />;
    return (
      <>
        <BackToList workspace={workspace} />
        {endpoints.loading && !endpoints.data ? (
          <Loading what="the webhook endpoint" />
        ) : endpoints.error ? (
          <ErrorMessage error={endpoints.error} />
        ) : (
          <p className="empty">This workspace has no webhook endpoint “{openId}” (it may have been deleted).</p>
        )}
      </>
    );
  }
  return (
    <>
      <div className="page-head">
        <h1>Webhooks</h1>
        <button type="button" onClick={() => setEditing('new')}>
          Add endpoint
        </button>
      </div>
      <p className="muted">
        Endpoints receive the workspace’s events as signed HTTP POSTs (Standard Webhooks: <code>webhook-id</code>, <code>webhook-timestamp</code>,{' '}
        <code>webhook-signature</code>).
      </p>
      {endpoints.loading && !endpoints.data ? (
        <Loading what="webhook endpoints" />
      ) : endpoints.error ? (
        <ErrorMessage error={endpoints.error} />
      ) : endpoints.data && endpoints.data.endpoints.length === 0 ? (
        <Empty>No webhook endpoints yet. Add one to receive the workspace’s events.</Empty>
      ) : endpoints.data ? (
        <TableWrap>
          <table className="table">
            <thead>
              <tr>
                <th>URL</th>
                <th>Event types</th>
                <th>State</th>
                <th>
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {endpoints.data.endpoints.map((e) => (
                <tr key={e.id} data-endpoint-id={e.id}>
                  <td className="wrap">
                    <code>{e.url}</code>
                    {e.description && <div className="muted small">{e.description}</div>}
                  </td>
                  <td className="wrap">{e.eventTypes ? e.eventTypes.join(', ') : <span className="muted">all</span>}</td>
                  <td className="wrap">
                    <EndpointState endpoint={e} />
                  </td>
                  <td>
                    <Link to={endpointPath(workspace, e.id)} className="button secondary" aria-label={`Open ${e.url}`}>
                      Open
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {editing && (
        <EndpointDialog
          workspace={workspace}
          endpoint={editing === 'new' ? undefined : editing}
          onClose={(created) => {
            setEditing(undefined);
            endpoints.reload();
            if (created) navigate(endpointPath(workspace, created));
          }}
        />
      )}
    </>
  );
}

/** Create (the secret is shown once in the dialog) or edit an endpoint. */
function EndpointDialog({ workspace, endpoint, onClose }: { workspace: WorkspaceRef; endpoint?: Endpoint; onClose: (openId?: string) => void }) {
  const action = useAction();
  const [created, setCreated] = useState<{ id: string; secret: string }>();

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const body: Body = {
      url: String(f.get('url')).trim(),
      description: String(f.get('description') ?? ''),
      eventTypes: typesOf(String(f.get('eventTypes') ?? '')),
      enabled: f.get('enabled') === 'on',
    };
    if (endpoint) {
      const saved = await action.run(() =>
        call(() => api.PATCH('/api/portal/webhooks/{id}', { params: { path: { id: endpoint.id } }, body, ...inWorkspace(workspace.slug) })),
      );
      if (saved) onClose();
    } else {
      const made = await action.run(() => call(() => api.POST('/api/portal/webhooks', { body, ...inWorkspace(workspace.slug) })));
      if (made) setCreated({ id: made.endpoint.id, secret: made.secret });
    }
  }

  if (created)
    return (
      <Dialog title="Endpoint added" onClose={() => onClose(created.id)}>
        <p>Verify the signatures of what this endpoint receives with its signing secret. You can reveal it again on the endpoint’s page.</p>
        <SecretField secret={created.secret} label="Signing secret" />
        <div className="actions">
          <button type="button" onClick={() => onClose(created.id)}>
            Done
          </button>
        </div>
      </Dialog>
    );
  return (
    <Dialog title={endpoint ? 'Edit the endpoint' : 'Add a webhook endpoint'} onClose={() => onClose()}>
      <form onSubmit={submit}>
        <label>
          URL
          <input name="url" type="url" required maxLength={2048} autoFocus defaultValue={endpoint?.url} placeholder="https://example.com/webhooks/plana" />
        </label>
        <label>
          Description
          <input name="description" maxLength={500} defaultValue={endpoint?.description} />
        </label>
        <label>
          Event types <span className="muted small">(comma separated; empty for every type)</span>
          <input name="eventTypes" defaultValue={endpoint?.eventTypes?.join(', ') ?? ''} placeholder="invoice.posted, payment.received" />
        </label>
        <label className="check">
          <input type="checkbox" name="enabled" defaultChecked={endpoint?.enabled ?? true} /> Enabled
        </label>
        <ErrorMessage error={action.error} />
        <div className="actions">
          <button type="button" className="secondary" onClick={() => onClose()}>
            Cancel
          </button>
          <button type="submit" disabled={action.busy}>
            {action.busy ? 'Saving…' : endpoint ? 'Save' : 'Add endpoint'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function SecretField({ secret, label }: { secret: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="token-row">
      <input className="token" readOnly value={secret} aria-label={label} onFocus={(e) => e.currentTarget.select()} />
      <button type="button" onClick={() => void navigator.clipboard?.writeText(secret).then(() => setCopied(true), () => setCopied(false))}>
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

/** The attempts of one page: the newest (looked at again every few seconds), then older ones on request. */
const ATTEMPTS_PAGE = 50;

/** Both lists in one, each attempt once, newest first; attempts of the same instant keep the API's order (ids are random). */
function mergeAttempts(a: Attempt[], b: Attempt[]): Attempt[] {
  const byId = new Map<string, Attempt>();
  for (const x of [...a, ...b]) byId.set(x.id, x);
  return [...byId.values()].sort((x, y) => y.attemptedAt.localeCompare(x.attemptedAt));
}

/** Attempts grouped by message (with its event type), newest message first. */
function byMessage(attempts: Attempt[]) {
  const groups = new Map<string, Attempt[]>();
  for (const a of attempts) groups.set(a.messageId, [...(groups.get(a.messageId) ?? []), a]);
  return [...groups.entries()].map(([messageId, list]) => ({ messageId, eventType: list[0]!.eventType, attempts: list }));
}

const BackToList = ({ workspace }: { workspace: WorkspaceRef }) => (
  <p>
    <Link to={listPath(workspace)}>← All endpoints</Link>
  </p>
);

function EndpointView({ workspace, endpoint, onChanged }: { workspace: WorkspaceRef; endpoint: Endpoint; onChanged: () => void }) {
  const ws = inWorkspace(workspace.slug);
  const path = { path: { id: endpoint.id } };
  const attempts = useLoad(() => call(() => api.GET('/api/portal/webhooks/{id}/attempts', { params: { ...path, query: { limit: ATTEMPTS_PAGE } }, ...ws })), [endpoint.id]);
  // older pages (the API's `before` cursor), and every newer attempt seen since, so no gap opens
  // between them when new attempts push rows off the first page
  const [kept, setKept] = useState<Attempt[]>([]);
  const [older, setOlder] = useState<{ more?: boolean; busy: boolean; error?: unknown }>({ busy: false });
  useEffect(() => {
    setKept([]);
    setOlder({ busy: false });
  }, [endpoint.id]);
  useEffect(() => {
    const latest = attempts.data?.attempts;
    if (latest) setKept((k) => (k.length ? mergeAttempts(k, latest) : k));
  }, [attempts.data]);
  const all = mergeAttempts(kept, attempts.data?.attempts ?? []);
  const hasOlder = older.more ?? attempts.data?.attempts.length === ATTEMPTS_PAGE;
  async function loadOlder() {
    const oldest = all.at(-1);
    if (!oldest) return;
    setOlder((o) => ({ ...o, busy: true, error: undefined }));
    try {
      const page = await call(() => api.GET('/api/portal/webhooks/{id}/attempts', { params: { ...path, query: { limit: ATTEMPTS_PAGE, before: oldest.id } }, ...ws }));
      setKept(mergeAttempts(all, page.attempts));
      setOlder({ more: page.attempts.length === ATTEMPTS_PAGE, busy: false });
    } catch (error) {
      setOlder((o) => ({ ...o, busy: false, error }));
    }
  }
  const action = useAction();
  const [secrets, setSecrets] = useState<Secrets>();
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [notice, setNotice] = useState<string>();

  // deliveries, retries and an automatic disable happen in the background: look again every few seconds
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState !== 'visible') return;
      attempts.reload();
      onChanged();
    }, 3000);
    return () => clearInterval(timer);
  }, [endpoint.id]);

  const done = (text: string) => {
    setNotice(text);
    attempts.reload();
    onChanged();
  };
  const sendTest = () =>
    action.run(async () => {
      const a = await call(() => api.POST('/api/portal/webhooks/{id}/test', { params: path, ...ws }));
      done(a.outcome === 'ok' ? `Test event delivered: ${a.statusCode} in ${a.durationMs} ms.` : `Test event not delivered: ${a.error ?? a.statusCode ?? a.outcome}.`);
    });
  const reveal = () => action.run(async () => setSecrets(await call(() => api.GET('/api/portal/webhooks/{id}/secret', { params: path, ...ws }))));
  const rotate = () =>
    action.run(async () => {
      setSecrets(await call(() => api.POST('/api/portal/webhooks/{id}/secret/rotate', { params: path, ...ws })));
      setNotice('A new signing secret is in use; the previous one keeps signing as well until it expires.');
    });
  const setEnabled = (enabled: boolean) =>
    action.run(async () => {
      await call(() => api.PATCH('/api/portal/webhooks/{id}', { params: path, body: { enabled }, ...ws }));
      done(enabled ? 'The endpoint is enabled.' : 'The endpoint is disabled: it receives nothing until enabled.');
    });
  const replayOne = (messageId: string) =>
    action.run(async () => {
      const r = await call(() => api.POST('/api/portal/webhooks/{id}/replay', { params: path, body: { messageId }, ...ws }));
      done(r.replayed.length ? `Message ${messageId} is being sent again.` : `Message ${messageId} is being sent already.`);
    });
  function replayRange(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const since = isoOf(f.get('since'));
    if (!since) return action.setError(new Error('Choose from when to replay.'));
    const until = isoOf(f.get('until'));
    void action.run(async () => {
      const r = await call(() => api.POST('/api/portal/webhooks/{id}/replay', { params: path, body: { since, ...(until ? { until } : {}) }, ...ws }));
      done(
        r.replayed.length + r.inProgress.length === 0
          ? 'No failed message in that time range.'
          : `${r.replayed.length} failed message${r.replayed.length === 1 ? '' : 's'} sent again${r.inProgress.length ? `; ${r.inProgress.length} being sent already` : ''}.`,
      );
    });
  }

  const messages = byMessage(all);
  return (
    <>
      <BackToList workspace={workspace} />
      <div className="page-head">
        <h1 className="wrap">
          Endpoint <code>{endpoint.url}</code>
        </h1>
      </div>
      <p>
        <EndpointState endpoint={endpoint} /> {endpoint.description && <span className="muted">{endpoint.description}</span>}
      </p>
      <p className="muted">Event types: {endpoint.eventTypes ? endpoint.eventTypes.join(', ') : 'all'}</p>
      <div className="toolbar">
        <button type="button" onClick={() => void sendTest()} disabled={action.busy}>
          Send test event
        </button>
        <button type="button" className="secondary" onClick={() => setEditing(true)}>
          Edit
        </button>
        <button type="button" className="secondary" onClick={() => void setEnabled(!endpoint.enabled)} disabled={action.busy}>
          {endpoint.enabled ? 'Disable' : 'Enable'}
        </button>
        <button type="button" className="danger" onClick={() => setDeleting(true)}>
          Delete
        </button>
      </div>
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <ErrorMessage error={action.error} />

      <section className="card" aria-labelledby="secret-title">
        <h2 id="secret-title">Signing secret</h2>
        {secrets ? (
          <>
            <SecretField secret={secrets.secret} label="Signing secret" />
            {secrets.previousSecret && (
              <p className="muted small">The previous secret still signs as well until {formatDate(secrets.previousSecretExpiresAt)}.</p>
            )}
          </>
        ) : (
          <p className="muted">Hidden. Reveal it to configure your receiver.</p>
        )}
        <div className="toolbar">
          {!secrets && (
            <button type="button" className="secondary" onClick={() => void reveal()} disabled={action.busy}>
              Reveal secret
            </button>
          )}
          <button type="button" className="secondary" onClick={() => void rotate()} disabled={action.busy}>
            Rotate secret
          </button>
        </div>
      </section>

      <section aria-labelledby="messages-title">
        <h2 id="messages-title">Messages and attempts</h2>
        {!endpoint.enabled && <p className="muted">The endpoint is disabled: enable it to replay messages.</p>}
        {attempts.loading && !attempts.data ? (
          <Loading what="attempts" />
        ) : attempts.error ? (
          <ErrorMessage error={attempts.error} />
        ) : messages.length === 0 ? (
          <Empty>Nothing was sent to this endpoint yet. Send a test event to try it.</Empty>
        ) : (
          <TableWrap>
            <table className="table attempts">
              <thead>
                <tr>
                  <th>Time</th>
                  <th>Trigger</th>
                  <th className="num">Status</th>
                  <th className="num">Duration</th>
                  <th>Response</th>
                </tr>
              </thead>
              {messages.map((m) => (
                <tbody key={m.messageId} data-message-id={m.messageId}>
                  <tr className="message">
                    <th colSpan={4} scope="rowgroup">
                      <span className="event-type">{m.eventType ?? 'event type unknown'}</span> <span className="muted small">message</span>{' '}
                      <code>{m.messageId}</code>
                    </th>
                    <td>
                      {m.messageId.startsWith('msg_test_') ? (
                        <span className="muted small">test event</span>
                      ) : (
                        <button
                          type="button"
                          className="secondary"
                          onClick={() => void replayOne(m.messageId)}
                          disabled={action.busy || !endpoint.enabled}
                          aria-label={`Replay ${m.messageId}`}
                        >
                          Replay
                        </button>
                      )}
                    </td>
                  </tr>
                  {m.attempts.map((a) => (
                    <tr key={a.id} className="attempt" data-outcome={a.outcome}>
                      <td>{formatDate(a.attemptedAt)}</td>
                      <td>{a.trigger}</td>
                      <td className={`num status s${String(a.statusCode ?? 5)[0]}`}>{a.statusCode ?? a.outcome}</td>
                      <td className="num">{a.durationMs} ms</td>
                      <td className="wrap excerpt">
                        {a.error && <div className="error-text">{a.error}</div>}
                        {a.responseExcerpt ? <code>{a.responseExcerpt.slice(0, 300)}</code> : <span className="muted">(empty)</span>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              ))}
            </table>
          </TableWrap>
        )}
        {messages.length > 0 && (
          <div className="toolbar">
            <span className="muted small">
              {all.length} attempt{all.length === 1 ? '' : 's'} shown{older.more === false ? '; there are no older ones' : ''}.
            </span>
            {hasOlder && (
              <button type="button" className="secondary" onClick={() => void loadOlder()} disabled={older.busy}>
                {older.busy ? 'Loading…' : 'Load older attempts'}
              </button>
            )}
          </div>
        )}
        <ErrorMessage error={older.error} />
      </section>

      <section className="card" aria-labelledby="replay-title">
        <h2 id="replay-title">Replay failed messages</h2>
        <form className="filters" onSubmit={replayRange} aria-label="Replay failed messages">
          <label>
            From
            <input name="since" type="datetime-local" required />
          </label>
          <label>
            Until <span className="muted small">(default now)</span>
            <input name="until" type="datetime-local" />
          </label>
          <button type="submit" disabled={action.busy || !endpoint.enabled}>
            Replay failed
          </button>
        </form>
      </section>

      {editing && <EndpointDialog workspace={workspace} endpoint={endpoint} onClose={() => (setEditing(false), onChanged())} />}
      {deleting && <DeleteDialog workspace={workspace} endpoint={endpoint} onClose={(deleted) => (setDeleting(false), deleted ? navigate(listPath(workspace)) : undefined)} />}
    </>
  );
}

function DeleteDialog({ workspace, endpoint, onClose }: { workspace: WorkspaceRef; endpoint: Endpoint; onClose: (deleted: boolean) => void }) {
  const action = useAction();
  const remove = () =>
    action.run(async () => {
      await call(() => api.DELETE('/api/portal/webhooks/{id}', { params: { path: { id: endpoint.id } }, ...inWorkspace(workspace.slug) }));
      onClose(true);
    });
  return (
    <Dialog title="Delete this endpoint?" onClose={() => onClose(false)}>
      <p>
        <code>{endpoint.url}</code> receives nothing more from this workspace. This cannot be undone.
      </p>
      <ErrorMessage error={action.error} />
      <div className="actions">
        <button type="button" className="secondary" onClick={() => onClose(false)} autoFocus>
          Cancel
        </button>
        <button type="button" className="danger" disabled={action.busy} onClick={() => void remove()}>
          {action.busy ? 'Deleting…' : 'Delete endpoint'}
        </button>
      </div>
    </Dialog>
  );
}
