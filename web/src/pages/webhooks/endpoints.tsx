/** What the webhooks pages share: the API's types, the pages' addresses, an endpoint's state badge. */
import type { paths } from '../../api/schema';
import { formatDate } from '../../format';
import type { WorkspaceRef } from '../../nav';
import { Link } from '../../router';

export type Endpoint =
  paths['/api/portal/webhooks']['get']['responses']['200']['content']['application/json']['endpoints'][number];
export type Attempt =
  paths['/api/portal/webhooks/{id}/attempts']['get']['responses']['200']['content']['application/json']['attempts'][number];
export type Secrets =
  paths['/api/portal/webhooks/{id}/secret']['get']['responses']['200']['content']['application/json'];
export type EndpointBody = NonNullable<
  paths['/api/portal/webhooks']['post']['requestBody']
>['content']['application/json'];

/** The list's address, and an endpoint's page (its own address: a reload or a link opens it). */
export const listPath = (workspace: WorkspaceRef) => `w/${workspace.slug}/webhooks`;
export const endpointPath = (workspace: WorkspaceRef, id: string) => `${listPath(workspace)}/${encodeURIComponent(id)}`;

export function EndpointState({ endpoint }: { endpoint: Endpoint }) {
  if (!endpoint.enabled)
    return <span className="badge bad">Disabled{endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ''}</span>;
  if (endpoint.failingSince)
    return <span className="badge warn">Failing since {formatDate(endpoint.failingSince)}</span>;
  return <span className="badge ok">Enabled</span>;
}

export const BackToList = ({ workspace }: { workspace: WorkspaceRef }) => (
  <p>
    <Link to={listPath(workspace)}>← All endpoints</Link>
  </p>
);
