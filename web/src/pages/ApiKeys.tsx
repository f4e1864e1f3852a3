/**
 * The workspace's API keys (admins): list, create with a scope picker (the token is shown once,
 * in the dialog, and kept nowhere else), revoke after a confirmation.
 */
import { useState, type FormEvent } from 'react';
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { Dialog, Empty, ErrorMessage, Loading, TableWrap, formatDate, useLoad } from '../components';
import type { WorkspaceRef } from '../nav';

type CreateBody = NonNullable<paths['/api/portal/apikeys']['post']['requestBody']>['content']['application/json'];
type Scope = NonNullable<CreateBody['scopes']>[number];
type Key = paths['/api/portal/apikeys']['get']['responses']['200']['content']['application/json']['items'][number];

/** Every scope of the API (the generated type makes this list complete). */
const SCOPES: Record<Scope, string> = {
  'dashboard:read': 'Dashboards: KPIs, cash flow, alerts',
  'agents:invoke': 'Agents: chat with the workspace’s agents',
  'banking:read': 'Banking: read accounts and transactions',
  'webhooks:write': 'Webhooks: receive workspace webhooks',
  '*': 'Everything (discouraged)',
};

export function ApiKeys({ workspace }: { workspace: WorkspaceRef }) {
  const query = { query: { workspace: workspace.slug } };
  const keys = useLoad(() => call(() => api.GET('/api/portal/apikeys', { params: query })), [workspace.slug]);
  const [creating, setCreating] = useState(false);
  const [revoking, setRevoking] = useState<Key>();

  return (
    <>
      <div className="page-head">
        <h1>API keys</h1>
        <button type="button" onClick={() => setCreating(true)}>
          Create key
        </button>
      </div>
      <p className="muted">Keys call the Workspace API as this workspace: send one as <code>Authorization: Bearer ws_live_…</code>.</p>
      {keys.loading && !keys.data ? (
        <Loading what="API keys" />
      ) : keys.error ? (
        <ErrorMessage error={keys.error} />
      ) : keys.data && keys.data.items.length === 0 ? (
        <Empty>No API keys yet. Create one to call the Workspace API.</Empty>
      ) : keys.data ? (
        <TableWrap>
          <table className="table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Prefix</th>
                <th>Scopes</th>
                <th>Created</th>
                <th>Last used</th>
                <th>
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.data.items.map((k) => (
                <tr key={k.id} data-key-prefix={k.prefix}>
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}</code>
                  </td>
                  <td>{k.scopes.join(', ')}</td>
                  <td>{formatDate(k.createdAt)}</td>
                  <td>{k.lastUsedAt ? formatDate(k.lastUsedAt) : 'never'}</td>
                  <td>
                    <button type="button" className="danger" onClick={() => setRevoking(k)} aria-label={`Revoke ${k.name}`}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {creating && <CreateKeyDialog workspace={workspace} onClose={() => (setCreating(false), keys.reload())} />}
      {revoking && <RevokeDialog workspace={workspace} apiKey={revoking} onClose={() => (setRevoking(undefined), keys.reload())} />}
    </>
  );
}

function CreateKeyDialog({ workspace, onClose }: { workspace: WorkspaceRef; onClose: () => void }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  // the token lives in this dialog's state only: closing the dialog or reloading the page drops it
  const [created, setCreated] = useState<{ name: string; token: string }>();
  const [copied, setCopied] = useState(false);

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const scopes = form.getAll('scope').map(String) as Scope[];
    setError(undefined);
    if (scopes.length === 0) return setError(new Error('Pick at least one scope.'));
    setBusy(true);
    try {
      const key = await call(() =>
        api.POST('/api/portal/apikeys', { params: { query: { workspace: workspace.slug } }, body: { name: String(form.get('name')), scopes } }),
      );
      setCreated({ name: key.name, token: key.token });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  if (created) {
    return (
      <Dialog title={`Key “${created.name}” created`} onClose={onClose}>
        <p>
          Copy the token now. <strong>It is shown only this once</strong>: it is not stored anywhere you can read it again.
        </p>
        <div className="token-row">
          <input className="token" readOnly value={created.token} aria-label="API key token" onFocus={(e) => e.currentTarget.select()} />
          <button
            type="button"
            onClick={() => void navigator.clipboard?.writeText(created.token).then(() => setCopied(true), () => setCopied(false))}
          >
            {copied ? 'Copied' : 'Copy'}
          </button>
        </div>
        <div className="actions">
          <button type="button" onClick={onClose}>
            Done
          </button>
        </div>
      </Dialog>
    );
  }
  return (
    <Dialog title="Create an API key" onClose={onClose}>
      <form onSubmit={submit}>
        <label>
          Name
          <input name="name" required maxLength={100} autoFocus placeholder="e.g. reporting" />
        </label>
        <fieldset>
          <legend>Scopes</legend>
          {(Object.keys(SCOPES) as Scope[]).map((s) => (
            <label key={s} className="check">
              <input type="checkbox" name="scope" value={s} defaultChecked={s === 'dashboard:read'} />
              <code>{s}</code> <span className="muted">{SCOPES[s]}</span>
            </label>
          ))}
        </fieldset>
        <ErrorMessage error={error} />
        <div className="actions">
          <button type="button" className="secondary" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" disabled={busy}>
            {busy ? 'Creating…' : 'Create key'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function RevokeDialog({ workspace, apiKey, onClose }: { workspace: WorkspaceRef; apiKey: Key; onClose: () => void }) {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  async function revoke() {
    setBusy(true);
    try {
      await call(() => api.DELETE('/api/portal/apikeys/{id}', { params: { path: { id: apiKey.id }, query: { workspace: workspace.slug } } }));
      onClose();
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  }
  return (
    <Dialog title={`Revoke “${apiKey.name}”?`} onClose={onClose}>
      <p>
        The key <code>{apiKey.prefix}…</code> <strong>stops working at once</strong>: every call made with it is refused from now on. This cannot be
        undone.
      </p>
      <ErrorMessage error={error} />
      <div className="actions">
        <button type="button" className="secondary" onClick={onClose} autoFocus>
          Cancel
        </button>
        <button type="button" className="danger" disabled={busy} onClick={() => void revoke()}>
          {busy ? 'Revoking…' : 'Revoke key'}
        </button>
      </div>
    </Dialog>
  );
}
