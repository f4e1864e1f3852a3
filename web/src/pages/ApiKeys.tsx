/**
 * The workspace's API keys (admins): list, create with a scope picker (the token is shown once,
 * in the dialog, and kept nowhere else), revoke after a confirmation.
 */
import { useState, type FormEvent } from 'react';
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { ACTIONS, ConfirmDialog, Dialog, FormActions, Loaded, SecretOnceDialog, Table } from '../components';
import { formatDate } from '../format';
import { useAction, useLoad } from '../hooks';
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
      <p className="muted">
        Keys call the Workspace API as this workspace: send one as <code>Authorization: Bearer ws_live_…</code>.
      </p>
      <Loaded
        state={keys}
        what="API keys"
        empty="No API keys yet. Create one to call the Workspace API."
        isEmpty={(d) => d.items.length === 0}
      >
        {(d) => <KeyTable keys={d.items} onRevoke={setRevoking} />}
      </Loaded>
      {creating && <CreateKeyDialog workspace={workspace} onClose={() => (setCreating(false), keys.reload())} />}
      {revoking && (
        <RevokeKeyDialog
          workspace={workspace}
          apiKey={revoking}
          onClose={() => (setRevoking(undefined), keys.reload())}
        />
      )}
    </>
  );
}

function KeyTable({ keys, onRevoke }: { keys: Key[]; onRevoke: (key: Key) => void }) {
  return (
    <Table columns={['Name', 'Prefix', 'Scopes', 'Created', 'Last used', ACTIONS]}>
      {keys.map((k) => (
        <tr key={k.id} data-key-prefix={k.prefix}>
          <td>{k.name}</td>
          <td>
            <code>{k.prefix}</code>
          </td>
          <td>{k.scopes.join(', ')}</td>
          <td>{formatDate(k.createdAt)}</td>
          <td>{k.lastUsedAt ? formatDate(k.lastUsedAt) : 'never'}</td>
          <td>
            <button type="button" className="danger" onClick={() => onRevoke(k)} aria-label={`Revoke ${k.name}`}>
              Revoke
            </button>
          </td>
        </tr>
      ))}
    </Table>
  );
}

function CreateKeyDialog({ workspace, onClose }: { workspace: WorkspaceRef; onClose: () => void }) {
  const action = useAction();
  // the token lives in this dialog's state only: closing the dialog or reloading the page drops it
  const [created, setCreated] = useState<{ name: string; token: string }>();

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const scopes = form.getAll('scope').map(String) as Scope[];
    if (scopes.length === 0) return action.setError(new Error('Pick at least one scope.'));
    const key = await action.run(() =>
      call(() =>
        api.POST('/api/portal/apikeys', {
          params: { query: { workspace: workspace.slug } },
          body: { name: String(form.get('name')), scopes },
        }),
      ),
    );
    if (key) setCreated({ name: key.name, token: key.token });
  }

  if (created)
    return (
      <SecretOnceDialog
        title={`Key “${created.name}” created`}
        secret={created.token}
        label="API key token"
        onClose={onClose}
      >
        <p>
          Copy the token now. <strong>It is shown only this once</strong>: it is not stored anywhere you can read it
          again.
        </p>
      </SecretOnceDialog>
    );
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
        <FormActions
          error={action.error}
          busy={action.busy}
          onCancel={onClose}
          submit="Create key"
          busyText="Creating…"
        />
      </form>
    </Dialog>
  );
}

function RevokeKeyDialog({
  workspace,
  apiKey,
  onClose,
}: {
  workspace: WorkspaceRef;
  apiKey: Key;
  onClose: () => void;
}) {
  const revoke = async () => {
    await call(() =>
      api.DELETE('/api/portal/apikeys/{id}', {
        params: { path: { id: apiKey.id }, query: { workspace: workspace.slug } },
      }),
    );
    onClose();
  };
  return (
    <ConfirmDialog
      title={`Revoke “${apiKey.name}”?`}
      confirm="Revoke key"
      busyText="Revoking…"
      onConfirm={revoke}
      onCancel={onClose}
    >
      <p>
        The key <code>{apiKey.prefix}…</code> <strong>stops working at once</strong>: every call made with it is refused
        from now on. This cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
