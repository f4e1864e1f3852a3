/**
 * Whether a workspace is suspended (payment failed past its grace period, DESIGN §5), as the
 * Workspace API's key check needs it on every request: read from PostgreSQL and trusted for
 * WORKSPACE_STANDING_CACHE_MS, so a warm request does no I/O and a suspension or its lifting
 * reaches every API replica within that time.
 */
import type { Queryable } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';

export class WorkspaceStanding {
  private readonly cache = new Map<string, { suspended: boolean; at: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs: number,
  ) {}

  /** True/false when this process read it recently (no I/O), else undefined. */
  cached(workspaceId: string): boolean | undefined {
    const hit = this.cache.get(workspaceId);
    if (!hit || performance.now() - hit.at > this.ttlMs) return undefined;
    return hit.suspended;
  }

  async suspended(workspaceId: string): Promise<boolean> {
    const hit = this.cached(workspaceId);
    if (hit !== undefined) return hit;
    const { rows } = await this.db.query<{ suspended: boolean }>(
      'SELECT suspended_at IS NOT NULL AS suspended FROM subscriptions WHERE workspace_id = $1',
      [workspaceId],
    );
    const suspended = rows[0]?.suspended === true;
    if (this.cache.size > 50_000) this.cache.clear();
    this.cache.set(workspaceId, { suspended, at: performance.now() });
    return suspended;
  }
}

export const workspaceSuspended = (slug: string) =>
  new AppError(
    'WORKSPACE_SUSPENDED',
    `Workspace "${slug}" is suspended because a payment failed and its grace period is over; its API keys work again once the open invoice is paid. An admin can still sign in (POST /api/auth/login) and see GET /api/billing/invoices.`,
  );
