/**
 * Which workspace an event belongs to and which of its endpoints want it, cached briefly: a
 * workspace's id for a minute (it never changes), its endpoints for CACHE_MS (an endpoint turned
 * off stops receiving within a second). A failed lookup is not cached.
 */
import type { Pool } from '../../lib/db.js';
import type { CloudEvent } from '../../domain/events/events.js';
import { sendingEndpoints, type SendingEndpoint } from '../../domain/webhooks/endpoints.js';

const WORKSPACE_TTL_MS = 60_000;
const ENDPOINTS_TTL_MS = 1_000;

interface Cached<T> {
  at: number;
  value: Promise<T>;
}

export class EndpointDirectory {
  private readonly workspaces = new Map<string, Cached<string | null>>();
  private readonly endpoints = new Map<string, Cached<SendingEndpoint[]>>();

  constructor(
    private readonly pool: Pool,
    private readonly secretsKey: string,
  ) {}

  /** The workspace of an event: CloudEvents extension `workspace` (its slug) or `tenant` (its name). */
  workspaceOf(ev: CloudEvent): Promise<string | null> {
    const slug = typeof ev.workspace === 'string' ? ev.workspace : undefined;
    const tenant = typeof ev.tenant === 'string' ? ev.tenant : undefined;
    if (!slug && !tenant) return Promise.resolve(null);
    return cached(this.workspaces, slug ? `w:${slug}` : `t:${tenant}`, WORKSPACE_TTL_MS, () =>
      this.pool
        .query<{ id: string }>(
          slug ? 'SELECT id FROM workspaces WHERE slug = $1' : 'SELECT workspace_id AS id FROM tenants WHERE name = $1',
          [slug ?? tenant],
        )
        .then((r) => r.rows[0]?.id ?? null),
    );
  }

  /** The workspace's endpoints, enabled or not. */
  endpointsOf(workspaceId: string): Promise<SendingEndpoint[]> {
    return cached(this.endpoints, workspaceId, ENDPOINTS_TTL_MS, () =>
      sendingEndpoints(this.pool, this.secretsKey, { workspaceId }),
    );
  }

  /** The workspace of an event and its enabled endpoints subscribed to the event's type (none: null). */
  async subscribersOf(ev: CloudEvent): Promise<{ workspaceId: string; endpoints: SendingEndpoint[] } | null> {
    const workspaceId = await this.workspaceOf(ev);
    if (!workspaceId) return null;
    const endpoints = (await this.endpointsOf(workspaceId)).filter(
      (e) => e.enabled && (e.eventTypes === null || e.eventTypes.includes(ev.type)),
    );
    return endpoints.length > 0 ? { workspaceId, endpoints } : null;
  }
}

function cached<T>(cache: Map<string, Cached<T>>, key: string, ttlMs: number, load: () => Promise<T>): Promise<T> {
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < ttlMs) return hit.value;
  const value = load();
  cache.set(key, { at: Date.now(), value });
  value.catch(() => cache.delete(key));
  return value;
}
