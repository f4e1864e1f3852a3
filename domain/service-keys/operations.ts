/** What operators see of the service keys: every pair of the inventory and its keys (ids, states, use; never a key or a hash). */
import type { Queryable } from '../../lib/db.js';
import { SERVICE_KEY_INVENTORY, pairName } from './inventory.js';
import { listKeys, type ServiceKeyRecord } from './registry.js';

export interface ServiceKeyPairView {
  caller: string;
  target: string;
  /** Both ends exist in the platform today (keys are created on first start). */
  live: boolean;
  what: string;
  keys: Omit<ServiceKeyRecord, 'caller' | 'target'>[];
}

export async function serviceKeyPairs(db: Queryable): Promise<ServiceKeyPairView[]> {
  const byPair = new Map<string, ServiceKeyPairView>(
    SERVICE_KEY_INVENTORY.map((p) => [pairName(p), { caller: p.caller, target: p.target, live: p.live, what: p.what, keys: [] }]),
  );
  for (const { caller, target, ...key } of await listKeys(db)) {
    const name = pairName({ caller, target });
    // a pair registered outside the inventory (by hand, or a test's own caller) is shown too
    if (!byPair.has(name)) byPair.set(name, { caller, target, live: true, what: 'not in the inventory', keys: [] });
    byPair.get(name)!.keys.push(key);
  }
  return [...byPair.values()];
}
