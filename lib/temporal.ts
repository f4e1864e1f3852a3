import { Client, Connection } from '@temporalio/client';
import type { Config } from './config.js';

export async function connectTemporal(cfg: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE'>): Promise<Client> {
  const connection = await Connection.connect({ address: cfg.TEMPORAL_ADDRESS });
  // Connecting runs the connection's AsyncLocalStorage (for its deadline), which leaves Node's async
  // hooks on for the life of the process: a cost on every promise and socket of every request. We
  // set no deadline, metadata or abort signal through it, so turn it off again; withDeadline() and
  // its kind would turn it back on for their call.
  connection.callContextStorage.disable();
  return new Client({ connection, namespace: cfg.TEMPORAL_NAMESPACE });
}

/** Link to a workflow in the Temporal Web UI. */
export function temporalUiLink(
  cfg: Pick<Config, 'TEMPORAL_UI_URL' | 'TEMPORAL_NAMESPACE'>,
  workflowId: string,
): string {
  return `${cfg.TEMPORAL_UI_URL}/namespaces/${encodeURIComponent(cfg.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
}
