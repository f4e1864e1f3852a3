/**
 * Tells a workspace's admins about a webhook problem, through the notifications service (/v1/alert),
 * unless the workspace turned `integrations` notifications off (settings).
 */
import type { Pool } from 'pg';
import { wantsNotification } from '../portal/settings.js';
import { workspaceAdminEmails } from './deliveries.js';

export interface AlertDeps {
  pool: Pool;
  notificationsUrl: string;
  notificationsKey: () => Promise<string>;
}

/** One alert per admin (none when the workspace turned integration notices off); `idempotencyKey` makes a retried call send nothing twice. Throws to be retried. */
export async function alertWorkspaceAdmins(
  deps: AlertDeps,
  workspaceId: string,
  alert: { title: string; message: string; severity: 'warning' | 'critical'; idempotencyKey: string },
): Promise<number> {
  if (!(await wantsNotification(deps.pool, workspaceId, 'integrations'))) return 0;
  const emails = await workspaceAdminEmails(deps.pool, workspaceId);
  const apiKey = await deps.notificationsKey();
  for (const to of emails) {
    const res = await fetch(new URL('/v1/alert', deps.notificationsUrl), {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': apiKey,
        'idempotency-key': `${alert.idempotencyKey}:${to}`,
      },
      body: JSON.stringify({
        to,
        severity: alert.severity,
        title: alert.title.slice(0, 200),
        message: alert.message.slice(0, 10_000),
      }),
      signal: AbortSignal.timeout(15_000),
    });
    if (!res.ok) throw new Error(`notifications service answered ${res.status} to a webhook alert`);
  }
  return emails.length;
}
