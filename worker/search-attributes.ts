/**
 * The custom search attributes the workflows set (domain/workflow-search-attributes.ts), registered by the
 * worker at start-up where they are missing.
 */
import type { Client } from '@temporalio/client';
// a CommonJS package: its named exports are not visible to Node's ESM loader, so take the default
import proto from '@temporalio/proto';
import { searchAttributes } from '../domain/workflow-search-attributes.js';

/**
 * Registers the platform's custom search attributes on the namespace if they are missing (a
 * Temporal cluster in production; the dev server already has them from its start flags).
 */
export async function ensureSearchAttributes(client: Client, namespace: string): Promise<string[]> {
  const existing = await client.connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = Object.values(searchAttributes).filter((k) => !known.has(k.name));
  if (missing.length === 0) return [];
  await client.connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((k) => [k.name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
  return missing.map((k) => k.name);
}
