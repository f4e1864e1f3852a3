/**
 * The workspace an agent call may read, as the account API vouches for it. The account API knows
 * the workspace from the verified workspace key; the agents service and the data service behind it
 * must not take a workspace id on trust (a bug or a prompt-injected tool call in the agents service
 * would otherwise be one header away from another workspace's figures). So the account API signs a
 * short-lived grant for exactly one workspace, which travels with the call (`X-Workspace-Grant`) and
 * which the data service checks against the workspace it is asked about, on every read.
 *
 * Format: `wg1.<workspace id>.<expiry, epoch seconds>.<HMAC-SHA256, base64url>`; the MAC key is
 * derived from SECRETS_KEY with HKDF (label "plana workspace grant v1"), so no new secret to deploy.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

const LABEL = 'plana workspace grant v1';
export const WORKSPACE_GRANT_HEADER = 'x-workspace-grant';
/** Long enough for the longest agent call (tool rounds × model deadline), short enough to be useless when leaked. */
export const WORKSPACE_GRANT_TTL_SECONDS = 600;

export class WorkspaceGrants {
  private readonly key: Buffer;

  constructor(secretsKeyBase64: string) {
    this.key = Buffer.from(hkdfSync('sha256', Buffer.from(secretsKeyBase64, 'base64'), Buffer.alloc(0), LABEL, 32));
  }

  private mac(body: string) {
    return createHmac('sha256', this.key).update(body).digest();
  }

  /** A grant for one workspace, valid for `ttlSeconds`. */
  issue(workspaceId: string, ttlSeconds = WORKSPACE_GRANT_TTL_SECONDS, now = Date.now()): string {
    const body = `wg1.${workspaceId}.${Math.floor(now / 1000) + ttlSeconds}`;
    return `${body}.${this.mac(body).toString('base64url')}`;
  }

  /** The workspace id a grant is good for, or undefined when it is forged, malformed or expired. */
  verify(grant: string | undefined, now = Date.now()): string | undefined {
    if (!grant) return undefined;
    const parts = grant.split('.');
    if (parts.length !== 4 || parts[0] !== 'wg1') return undefined;
    const [, workspaceId, expiry, sig] = parts as [string, string, string, string];
    const given = Buffer.from(sig, 'base64url');
    const expected = this.mac(`wg1.${workspaceId}.${expiry}`);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    if (!/^\d+$/.test(expiry) || Number(expiry) * 1000 < now) return undefined;
    return workspaceId;
  }
}
