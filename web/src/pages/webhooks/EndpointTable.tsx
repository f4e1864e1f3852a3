/** The workspace's webhook endpoints, each with its event types, state and a link to its page. */
import { ACTIONS, Table } from '../../components';
import type { WorkspaceRef } from '../../nav';
import { Link } from '../../router';
import { type Endpoint, EndpointState, endpointPath } from './endpoints';

export function EndpointTable({ workspace, endpoints }: { workspace: WorkspaceRef; endpoints: Endpoint[] }) {
  return (
    <Table columns={['URL', 'Event types', 'State', ACTIONS]}>
      {endpoints.map((e) => (
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
    </Table>
  );
}
