/**
 * Webhook endpoints of a workspace ("Registration" in the docs): plain SQL. Secrets are sealed with
 * SECRETS_KEY at rest; lists and reads never carry them (only create, reveal and rotate do). Then
 * what a sender reads of them (sendingEndpoints), and the dispatcher's EndpointDirectory: which
 * endpoints an event goes to.
 */
import type { Pool } from 'pg';
import { AppError } from '../../lib/errors.js';
import { open, seal } from '../../lib/secret-box.js';
import { newSecret } from './signing.js';
import { ERP_EVENT_TYPES } from '../erp-events/ingestion.js';
import type { CloudEvent } from '../events/events.js';

/**
 * The event types an endpoint can subscribe to: the ones that reach a workspace's endpoints (the
 * ERP's events; `webhook.test` goes to one endpoint on request, whatever it subscribes to).
 */
export const WEBHOOK_EVENT_TYPES: readonly string[] = ERP_EVENT_TYPES;

/** 400 for subscribed types outside the catalogue (an endpoint would never receive them), naming the known ones. */
export function checkEventTypes(eventTypes: readonly string[] | null | undefined): void {
  const unknown = (eventTypes ?? []).filter((t) => !WEBHOOK_EVENT_TYPES.includes(t));
  if (unknown.length === 0) return;
  throw new AppError(
    'BAD_REQUEST',
    `eventTypes: ${unknown.map((t) => JSON.stringify(t)).join(', ')} ${unknown.length === 1 ? 'is not an event type' : 'are not event types'}; ` +
      `the known ones are ${WEBHOOK_EVENT_TYPES.join(', ')} (or null for every type).`,
    { unknownEventTypes: unknown, knownEventTypes: WEBHOOK_EVENT_TYPES },
  );
}

export interface Endpoint {
  id: string;
  url: string;
  description: string;
  /** null: every event type. */
  eventTypes: string[] | null;
  enabled: boolean;
  disabledReason: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
}

const columns = `id, url, description, event_types AS "eventTypes", enabled, disabled_reason AS "disabledReason",
  failing_since AS "failingSince", created_at AS "createdAt", updated_at AS "updatedAt"`;

type Row = Omit<Endpoint, 'createdAt' | 'updatedAt' | 'failingSince'> & {
  createdAt: Date;
  updatedAt: Date;
  failingSince: Date | null;
};
const toEndpoint = (r: Row): Endpoint => ({
  ...r,
  createdAt: r.createdAt.toISOString(),
  updatedAt: r.updatedAt.toISOString(),
  failingSince: r.failingSince?.toISOString() ?? null,
});

const notFound = () => new AppError('NOT_FOUND', 'No webhook endpoint with this id in this workspace.');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class EndpointRepository {
  constructor(
    private readonly pool: Pool,
    private readonly secretsKey: string,
  ) {}

  async create(
    workspaceId: string,
    input: { url: string; description?: string; eventTypes?: string[] | null; enabled?: boolean },
    secretBytes = 32,
  ) {
    const secret = newSecret(secretBytes);
    const { rows } = await this.pool.query<Row>(
      `INSERT INTO webhook_endpoints (workspace_id, url, description, event_types, enabled, secret_sealed)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${columns}`,
      [
        workspaceId,
        input.url,
        input.description ?? '',
        input.eventTypes ?? null,
        input.enabled ?? true,
        seal(secret, this.secretsKey),
      ],
    );
    return { endpoint: toEndpoint(rows[0]!), secret };
  }

  async list(workspaceId: string): Promise<Endpoint[]> {
    const { rows } = await this.pool.query<Row>(
      `SELECT ${columns} FROM webhook_endpoints WHERE workspace_id = $1 ORDER BY created_at, id`,
      [workspaceId],
    );
    return rows.map(toEndpoint);
  }

  async get(workspaceId: string, id: string): Promise<Endpoint> {
    if (!UUID.test(id)) throw notFound();
    const { rows } = await this.pool.query<Row>(
      `SELECT ${columns} FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id],
    );
    if (!rows[0]) throw notFound();
    return toEndpoint(rows[0]);
  }

  async update(
    workspaceId: string,
    id: string,
    patch: { url?: string; description?: string; eventTypes?: string[] | null; enabled?: boolean },
  ) {
    await this.get(workspaceId, id);
    const { rows } = await this.pool.query<Row>(
      `UPDATE webhook_endpoints SET
         url = COALESCE($3, url),
         description = COALESCE($4, description),
         event_types = CASE WHEN $5::boolean THEN $6::text[] ELSE event_types END,
         enabled = COALESCE($7, enabled),
         -- re-enabling clears why it was disabled and the failure clock
         disabled_reason = CASE WHEN $7 IS TRUE THEN NULL ELSE disabled_reason END,
         failing_since = CASE WHEN $7 IS TRUE THEN NULL ELSE failing_since END,
         updated_at = now()
       WHERE workspace_id = $1 AND id = $2 RETURNING ${columns}`,
      [
        workspaceId,
        id,
        patch.url ?? null,
        patch.description ?? null,
        patch.eventTypes !== undefined,
        patch.eventTypes ?? null,
        patch.enabled ?? null,
      ],
    );
    return toEndpoint(rows[0]!);
  }

  async remove(workspaceId: string, id: string): Promise<void> {
    if (!UUID.test(id)) throw notFound();
    const { rowCount } = await this.pool.query(`DELETE FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2`, [
      workspaceId,
      id,
    ]);
    if (!rowCount) throw notFound();
  }

  /** The current secret, and the previous one while it still signs. */
  async secrets(workspaceId: string, id: string) {
    if (!UUID.test(id)) throw notFound();
    const { rows } = await this.pool.query<{ s: string; p: string | null; e: Date | null }>(
      `SELECT secret_sealed AS s, previous_secret_sealed AS p, previous_secret_expires_at AS e
         FROM webhook_endpoints WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id],
    );
    const r = rows[0];
    if (!r) throw notFound();
    const previousValid = r.p && r.e && r.e.getTime() > Date.now();
    return {
      secret: open(r.s, this.secretsKey),
      previousSecret: previousValid ? open(r.p!, this.secretsKey) : null,
      previousSecretExpiresAt: previousValid ? r.e!.toISOString() : null,
    };
  }

  /** A new secret; the current one keeps signing (a second signature) for `graceMs`. */
  async rotate(workspaceId: string, id: string, graceMs: number, secretBytes = 32) {
    if (!UUID.test(id)) throw notFound();
    const secret = newSecret(secretBytes);
    const { rowCount } = await this.pool.query(
      `UPDATE webhook_endpoints SET previous_secret_sealed = secret_sealed,
         previous_secret_expires_at = now() + ($3::bigint * interval '1 millisecond'),
         secret_sealed = $4, updated_at = now()
       WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id, graceMs, seal(secret, this.secretsKey)],
    );
    if (!rowCount) throw notFound();
    return this.secrets(workspaceId, id);
  }
}

/** What a sender needs of an endpoint: its URL, whether it is on, the secrets that sign now. */
export interface SendingEndpoint {
  id: string;
  workspaceId: string;
  /** The workspace's slug (the retry workflow's `Workspace` search attribute). */
  workspace: string;
  url: string;
  enabled: boolean;
  eventTypes: string[] | null;
  secrets: string[];
}

export async function sendingEndpoints(
  pool: Pool,
  secretsKey: string,
  where: { workspaceId: string } | { id: string },
): Promise<SendingEndpoint[]> {
  const byId = 'id' in where;
  const { rows } = await pool.query<{
    id: string;
    workspace_id: string;
    workspace: string;
    url: string;
    enabled: boolean;
    event_types: string[] | null;
    s: string;
    p: string | null;
    e: Date | null;
  }>(
    `SELECT id, workspace_id, (SELECT slug FROM workspaces w WHERE w.id = workspace_id) AS workspace, url, enabled, event_types, secret_sealed AS s, previous_secret_sealed AS p, previous_secret_expires_at AS e
       FROM webhook_endpoints WHERE ${byId ? 'id' : 'workspace_id'} = $1`,
    [byId ? where.id : where.workspaceId],
  );
  return rows.map((r) => ({
    id: r.id,
    workspaceId: r.workspace_id,
    workspace: r.workspace,
    url: r.url,
    enabled: r.enabled,
    eventTypes: r.event_types,
    secrets: [open(r.s, secretsKey), ...(r.p && r.e && r.e.getTime() > Date.now() ? [open(r.p, secretsKey)] : [])],
  }));
}

/**
 * EndpointDirectory: which workspace an event belongs to and which of its endpoints want it, cached briefly: a
 * workspace's id for a minute (it never changes), its endpoints for ENDPOINTS_TTL_MS (an endpoint turned
 * off stops receiving within a second). A failed lookup is not cached.
 */
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
