/** The dunning workflow's activities (workflows/dun-workspace.ts): e-mail the admins, suspend. */
import { Context } from '@temporalio/activity';
import type pg from 'pg';
import { suspendIfStillUnpaid, workspaceAdmins } from '../domain/billing/subscriptions.js';
import { wantsNotification, type NotificationCategory } from '../domain/portal/settings.js';

export interface BillingActivityDeps {
  pool: pg.Pool;
  notificationsUrl: string;
  notificationsKey: () => Promise<string>;
  /** Where the workspace's portal page lives: {API_PUBLIC_URL}/w/<slug> (DESIGN §5). */
  apiPublicUrl: string;
}

export interface DunningNotice {
  workspaceId: string;
  workspace: string;
  kind: 'payment-failed' | 'suspended';
  suspendAt: string;
  invoiceId: string;
}

/**
 * The preference each notice honours: a payment reminder is `billing` (a workspace may turn it
 * off); a suspension is a service notice, always sent (its keys stop working).
 */
export const DUNNING_NOTICE_CATEGORY: Record<DunningNotice['kind'], NotificationCategory> = {
  'payment-failed': 'billing',
  suspended: 'always',
};

function notice(n: DunningNotice, portal: string): { subject: string; text: string } {
  if (n.kind === 'payment-failed') {
    return {
      subject: `Payment failed for workspace ${n.workspace}`,
      text: `The payment of invoice ${n.invoiceId} for workspace "${n.workspace}" failed.\n\nPlease update the payment method or pay the invoice before ${n.suspendAt}; after that the workspace is suspended and its API keys stop working until the invoice is paid.\n\nInvoices: ${portal}\n`,
    };
  }
  return {
    subject: `Workspace ${n.workspace} is suspended`,
    text: `Invoice ${n.invoiceId} of workspace "${n.workspace}" is still unpaid, so the workspace is suspended: its API keys are refused (403 workspace-suspended). Admins can still sign in.\n\nThe suspension ends as soon as the invoice is paid: ${portal}\n`,
  };
}

export const createBillingActivities = (deps: BillingActivityDeps) => ({
  /**
   * One e-mail per admin through the notifications service's POST /v1/email; the idempotency key
   * (workflow id, kind, admin) makes a retried activity send nothing twice. None when the workspace
   * turned the notice's category off (settings; a suspension notice is always sent).
   */
  async notifyWorkspaceAdmins(n: DunningNotice): Promise<{ sent: number; skipped?: string }> {
    const category = DUNNING_NOTICE_CATEGORY[n.kind];
    if (!(await wantsNotification(deps.pool, n.workspaceId, category)))
      return { sent: 0, skipped: `the workspace turned ${category} notifications off` };
    const workflowId = Context.current().info.workflowExecution?.workflowId ?? `dunning:${n.workspace}`;
    const admins = await workspaceAdmins(deps.pool, n.workspaceId);
    const { subject, text } = notice(n, `${deps.apiPublicUrl.replace(/\/$/, '')}/w/${n.workspace}`);
    const key = await deps.notificationsKey();
    for (const admin of admins) {
      let res: Response;
      try {
        res = await fetch(new URL('/v1/email', deps.notificationsUrl), {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-api-key': key,
            'idempotency-key': `${workflowId}:${n.kind}:${admin.id}`,
          },
          body: JSON.stringify({ to: admin.email, subject, text }),
          signal: AbortSignal.timeout(15_000),
        });
      } catch (err) {
        throw new Error(`notifications service unreachable: ${(err as Error).message}`);
      }
      if (!res.ok) throw new Error(`notifications service answered ${res.status} for a dunning e-mail`);
    }
    return { sent: admins.length };
  },

  /** Suspends the workspace unless the run of failed payments was settled meanwhile. */
  async suspendWorkspace(input: { workspaceId: string; run: number }): Promise<boolean> {
    return suspendIfStillUnpaid(deps.pool, input.workspaceId, input.run);
  },
});
