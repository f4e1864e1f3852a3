/** The endpoint dialogs: add (its signing secret shown once) or edit an endpoint, and delete one. */
import { useState, type FormEvent } from 'react';
import { api, call, inWorkspace } from '../../api/client';
import { ConfirmDialog, Dialog, FormActions, SecretOnceDialog } from '../../components';
import { useAction } from '../../hooks';
import type { WorkspaceRef } from '../../nav';
import type { Endpoint, EndpointBody } from './endpoints';

/** "a, b c" → ['a', 'b', 'c']; nothing → null (every event type) */
const typesOf = (text: string) => {
  const types = [...new Set(text.split(/[\s,]+/).filter(Boolean))];
  return types.length ? types : null;
};

const bodyOf = (f: FormData): EndpointBody => ({
  url: String(f.get('url')).trim(),
  description: String(f.get('description') ?? ''),
  eventTypes: typesOf(String(f.get('eventTypes') ?? '')),
  enabled: f.get('enabled') === 'on',
});

/** Create (the secret is shown once in the dialog) or edit an endpoint; `onClose` gets a new endpoint's id. */
export function EndpointDialog({
  workspace,
  endpoint,
  onClose,
}: {
  workspace: WorkspaceRef;
  endpoint?: Endpoint;
  onClose: (openId?: string) => void;
}) {
  const action = useAction();
  const [created, setCreated] = useState<{ id: string; secret: string }>();
  const ws = inWorkspace(workspace.slug);

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const body = bodyOf(new FormData(e.currentTarget));
    if (endpoint) {
      const saved = await action.run(() =>
        call(() => api.PATCH('/api/portal/webhooks/{id}', { params: { path: { id: endpoint.id } }, body, ...ws })),
      );
      if (saved) onClose();
    } else {
      const made = await action.run(() => call(() => api.POST('/api/portal/webhooks', { body, ...ws })));
      if (made) setCreated({ id: made.endpoint.id, secret: made.secret });
    }
  }

  if (created) return <EndpointCreatedDialog secret={created.secret} onClose={() => onClose(created.id)} />;
  return (
    <Dialog title={endpoint ? 'Edit the endpoint' : 'Add a webhook endpoint'} onClose={() => onClose()}>
      <form onSubmit={submit}>
        <EndpointFields endpoint={endpoint} />
        <FormActions
          error={action.error}
          busy={action.busy}
          onCancel={() => onClose()}
          submit={endpoint ? 'Save' : 'Add endpoint'}
          busyText="Saving…"
        />
      </form>
    </Dialog>
  );
}

/** The endpoint's form fields, filled with an existing endpoint's values when editing. */
function EndpointFields({ endpoint }: { endpoint?: Endpoint }) {
  return (
    <>
      <label>
        URL
        <input
          name="url"
          type="url"
          required
          maxLength={2048}
          autoFocus
          defaultValue={endpoint?.url}
          placeholder="https://example.com/webhooks/plana"
        />
      </label>
      <label>
        Description
        <input name="description" maxLength={500} defaultValue={endpoint?.description} />
      </label>
      <label>
        Event types <span className="muted small">(comma separated; empty for every type)</span>
        <input
          name="eventTypes"
          defaultValue={endpoint?.eventTypes?.join(', ') ?? ''}
          placeholder="invoice.posted, payment.received"
        />
      </label>
      <label className="check">
        <input type="checkbox" name="enabled" defaultChecked={endpoint?.enabled ?? true} /> Enabled
      </label>
    </>
  );
}

/** A new endpoint's signing secret, shown once. */
function EndpointCreatedDialog({ secret, onClose }: { secret: string; onClose: () => void }) {
  return (
    <SecretOnceDialog title="Endpoint added" secret={secret} label="Signing secret" onClose={onClose}>
      <p>
        Verify the signatures of what this endpoint receives with its signing secret. You can reveal it again on the
        endpoint’s page.
      </p>
    </SecretOnceDialog>
  );
}

export function DeleteEndpointDialog({
  workspace,
  endpoint,
  onClose,
}: {
  workspace: WorkspaceRef;
  endpoint: Endpoint;
  onClose: (deleted: boolean) => void;
}) {
  const remove = async () => {
    await call(() =>
      api.DELETE('/api/portal/webhooks/{id}', {
        params: { path: { id: endpoint.id } },
        ...inWorkspace(workspace.slug),
      }),
    );
    onClose(true);
  };
  return (
    <ConfirmDialog
      title="Delete this endpoint?"
      confirm="Delete endpoint"
      busyText="Deleting…"
      onConfirm={remove}
      onCancel={() => onClose(false)}
    >
      <p>
        <code>{endpoint.url}</code> receives nothing more from this workspace. This cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
