/**
 * One endpoint's page: its address, state and event types; a test event, edit, enable or disable,
 * delete; the signing secret (revealed on demand, rotated); its messages and their attempts; replay
 * of every failed message in a time range.
 */
import { useState } from 'react';
import { ErrorMessage, Notice, SecretField } from '../../components';
import { formatDate } from '../../format';
import { usePolling } from '../../hooks';
import type { WorkspaceRef } from '../../nav';
import { navigate } from '../../router';
import { DeleteEndpointDialog, EndpointDialog } from './EndpointDialogs';
import { BackToList, type Endpoint, EndpointState, listPath } from './endpoints';
import { MessagesSection } from './MessageList';
import { useAttempts } from './useAttempts';
import { type EndpointActions, useEndpointActions } from './useEndpointActions';

/** `onChanged`: the endpoint may have changed (loads it again). */
export function EndpointView({
  workspace,
  endpoint,
  onChanged,
}: {
  workspace: WorkspaceRef;
  endpoint: Endpoint;
  onChanged: () => void;
}) {
  const attempts = useAttempts(workspace, endpoint.id);
  const refresh = () => {
    attempts.reload();
    onChanged();
  };
  const actions = useEndpointActions(workspace, endpoint, refresh);
  // deliveries, retries and an automatic disable happen in the background: look again every few seconds
  usePolling(refresh, 3000, [endpoint.id]);
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const busy = actions.action.busy;

  return (
    <>
      <BackToList workspace={workspace} />
      <EndpointHeader endpoint={endpoint} />
      <EndpointToolbar
        endpoint={endpoint}
        actions={actions}
        onEdit={() => setEditing(true)}
        onDelete={() => setDeleting(true)}
      />
      <Notice>{actions.notice}</Notice>
      <ErrorMessage error={actions.action.error} />
      <SecretPanel actions={actions} />
      <MessagesSection attempts={attempts} enabled={endpoint.enabled} busy={busy} onReplay={actions.replayOne} />
      <ReplayRangeForm onSubmit={actions.replayRange} disabled={busy || !endpoint.enabled} />
      {editing && (
        <EndpointDialog workspace={workspace} endpoint={endpoint} onClose={() => (setEditing(false), onChanged())} />
      )}
      {deleting && (
        <DeleteEndpointDialog
          workspace={workspace}
          endpoint={endpoint}
          onClose={(deleted) => (setDeleting(false), deleted ? navigate(listPath(workspace)) : undefined)}
        />
      )}
    </>
  );
}

function EndpointHeader({ endpoint }: { endpoint: Endpoint }) {
  return (
    <>
      <div className="page-head">
        <h1 className="wrap">
          Endpoint <code>{endpoint.url}</code>
        </h1>
      </div>
      <p>
        <EndpointState endpoint={endpoint} />{' '}
        {endpoint.description && <span className="muted">{endpoint.description}</span>}
      </p>
      <p className="muted">Event types: {endpoint.eventTypes ? endpoint.eventTypes.join(', ') : 'all'}</p>
    </>
  );
}

function EndpointToolbar({
  endpoint,
  actions,
  onEdit,
  onDelete,
}: {
  endpoint: Endpoint;
  actions: EndpointActions;
  onEdit: () => void;
  onDelete: () => void;
}) {
  const { busy } = actions.action;
  return (
    <div className="toolbar">
      <button type="button" onClick={() => void actions.sendTest()} disabled={busy}>
        Send test event
      </button>
      <button type="button" className="secondary" onClick={onEdit}>
        Edit
      </button>
      <button
        type="button"
        className="secondary"
        onClick={() => void actions.setEnabled(!endpoint.enabled)}
        disabled={busy}
      >
        {endpoint.enabled ? 'Disable' : 'Enable'}
      </button>
      <button type="button" className="danger" onClick={onDelete}>
        Delete
      </button>
    </div>
  );
}

/** The signing secret: hidden until revealed; rotating it shows the new one. */
function SecretPanel({ actions }: { actions: EndpointActions }) {
  const { secrets } = actions;
  const { busy } = actions.action;
  return (
    <section className="card" aria-labelledby="secret-title">
      <h2 id="secret-title">Signing secret</h2>
      {secrets ? (
        <>
          <SecretField secret={secrets.secret} label="Signing secret" />
          {secrets.previousSecret && (
            <p className="muted small">
              The previous secret still signs as well until {formatDate(secrets.previousSecretExpiresAt)}.
            </p>
          )}
        </>
      ) : (
        <p className="muted">Hidden. Reveal it to configure your receiver.</p>
      )}
      <div className="toolbar">
        {!secrets && (
          <button type="button" className="secondary" onClick={() => void actions.revealSecret()} disabled={busy}>
            Reveal secret
          </button>
        )}
        <button type="button" className="secondary" onClick={() => void actions.rotateSecret()} disabled={busy}>
          Rotate secret
        </button>
      </div>
    </section>
  );
}

function ReplayRangeForm({ onSubmit, disabled }: { onSubmit: EndpointActions['replayRange']; disabled: boolean }) {
  return (
    <section className="card" aria-labelledby="replay-title">
      <h2 id="replay-title">Replay failed messages</h2>
      <form className="filters" onSubmit={onSubmit} aria-label="Replay failed messages">
        <label>
          From
          <input name="since" type="datetime-local" required />
        </label>
        <label>
          Until <span className="muted small">(default now)</span>
          <input name="until" type="datetime-local" />
        </label>
        <button type="submit" disabled={disabled}>
          Replay failed
        </button>
      </form>
    </section>
  );
}
