/** The backup drill (domain/tenants/backup-drills.ts) and the operators' alert when one does not pass. */
import { Context } from '@temporalio/activity';
import { drillLatestBackup, drillTenantsOfTier, type DrillResult } from '../domain/tenants/backup-drills.js';
import type { Tier } from '../domain/tenants/types.js';
import type { NotificationsDeps } from './notifications.js';
import type { PlatformDeps } from './deps.js';

export const createBackupDrillActivities = (deps: NotificationsDeps & { tenant: PlatformDeps }) => {
  const { config, platformPool, backupStore, erpAdminPool } = deps.tenant;
  return {
    async listDrillTenants(input: { tier: Tier }) {
      return drillTenantsOfTier(platformPool, input.tier);
    },

    async drillLatestBackup(input: { tenant: string }) {
      Context.current().heartbeat();
      return drillLatestBackup(
        { cfg: config, pool: platformPool, store: backupStore, erpAdmin: erpAdminPool },
        input.tenant,
      );
    },

    /** POST /v1/alert to OPS_ALERT_EMAIL; the workflow id keys it, so a retry never mails twice. */
    async alertOperatorsOfDrill(result: DrillResult) {
      const { workflowExecution, activityId } = Context.current().info;
      const what = result.outcome === 'mismatch' ? 'does not match what was backed up' : 'failed';
      const res = await fetch(new URL('/v1/alert', deps.notificationsUrl), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': await deps.notificationsKey(),
          'idempotency-key': `${workflowExecution?.workflowId ?? activityId}:alert`,
        },
        body: JSON.stringify({
          to: config.OPS_ALERT_EMAIL,
          severity: 'critical',
          title: `Backup drill of ${result.tenant}: the restore ${what}`,
          message: [
            `The drill restored backup ${result.backupId ?? '(none)'} of tenant ${result.tenant} into a scratch tenant (${result.durationMs} ms).`,
            ...(result.error ? [`It failed: ${result.error}`] : []),
            ...result.mismatches.map((m) => `- ${m}`),
            `Drills of the tenant: GET /api/ops/tenants/${result.tenant}/drills. Restore it to look: npm run cli -- restore ${result.tenant}`,
          ].join('\n'),
        }),
        signal: AbortSignal.timeout(15_000),
      });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`notifications service answered ${res.status}`);
    },
  };
};
