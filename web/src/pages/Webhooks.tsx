/**
 * The workspace's webhooks (admins), after the Svix App Portal: endpoints (URL, event types,
 * enabled, or disabled with the reason), create / edit / delete, the signing secret revealed on
 * demand and rotated, a test event, the attempts of each message (time, status, duration, response
 * excerpt), replay of one message or of every failed one in a time range. The pieces are in
 * webhooks/: the list's table, an endpoint's page, its messages, the dialogs.
 */
import { useEffect, useRef, useState } from 'react';
import { api, call, inWorkspace } from '../api/client';
import { Empty, Loaded } from '../components';
import { useLoad } from '../hooks';
import type { WorkspaceRef } from '../nav';
import { navigate } from '../router';
import { EndpointDialog } from './webhooks/EndpointDialogs';
import { EndpointView } from './webhooks/EndpointPage';
import { EndpointTable } from './webhooks/EndpointTable';
import { BackToList, type Endpoint, endpointPath } from './webhooks/endpoints';

/** `subpath`: '' for the list, an endpoint's id for its page. */
export function Webhooks({ workspace, subpath }: { workspace: WorkspaceRef; subpath: string }) {
  const endpoints = useLoad(
    () => call(() => api.GET('/api/portal/webhooks', inWorkspace(workspace.slug))),
    [workspace.slug],
  );
  const openId = subpath ? decodeURIComponent(subpath) : undefined;
  // back on the list from an endpoint (the menu, the back link, the browser's back button): show it as it is now
  const shown = useRef(openId);
  useEffect(() => {
    if (shown.current && !openId) endpoints.reload();
    shown.current = openId;
  }, [openId]);

  if (!openId) return <EndpointList workspace={workspace} endpoints={endpoints} />;
  const open = endpoints.data?.endpoints.find((e) => e.id === openId);
  if (open) return <EndpointView workspace={workspace} endpoint={open} onChanged={endpoints.reload} />;
  return (
    <>
      <BackToList workspace={workspace} />
      <Loaded state={endpoints} what="the webhook endpoint">
        {() => <Empty>This workspace has no webhook endpoint “{openId}” (it may have been deleted).</Empty>}
      </Loaded>
    </>
  );
}

type EndpointsLoad = ReturnType<typeof useLoad<{ endpoints: Endpoint[] }>>;

function EndpointList({ workspace, endpoints }: { workspace: WorkspaceRef; endpoints: EndpointsLoad }) {
  const [editing, setEditing] = useState<Endpoint | 'new'>();
  return (
    <>
      <div className="page-head">
        <h1>Webhooks</h1>
        <button type="button" onClick={() => setEditing('new')}>
          Add endpoint
        </button>
      </div>
      <p className="muted">
        Endpoints receive the workspace’s events as signed HTTP POSTs (Standard Webhooks: <code>webhook-id</code>,{' '}
        <code>webhook-timestamp</code>, <code>webhook-signature</code>).
      </p>
      <Loaded
        state={endpoints}
        what="webhook endpoints"
        empty="No webhook endpoints yet. Add one to receive the workspace’s events."
        isEmpty={(d) => d.endpoints.length === 0}
      >
        {(d) => <EndpointTable workspace={workspace} endpoints={d.endpoints} />}
      </Loaded>
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
