import { Client, Connection } from '@temporalio/client';
import type { Config } from './config.js';

export async function connectTemporal(cfg: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE'>): Promise<Client> {
  const connection = await Connection.connect({ address: cfg.TEMPORAL_ADDRESS });
  return new Client({ connection, namespace: cfg.TEMPORAL_NAMESPACE });
}

/** Link to a workflow in the Temporal Web UI. */
export function temporalUiLink(cfg: Pick<Config, 'TEMPORAL_UI_URL' | 'TEMPORAL_NAMESPACE'>, workflowId: string): string {
  return `${cfg.TEMPORAL_UI_URL}/namespaces/${encodeURIComponent(cfg.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
}
