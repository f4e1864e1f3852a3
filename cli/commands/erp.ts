/**
 * `erp post-invoice <tenant>`: make an event happen for real. A customer invoice is created and
 * posted in the tenant's ERP (its admin, over Odoo's web session, as an accountant would); the
 * ERP's automation rule posts `invoice.posted` to the event ingestion and the webhook dispatcher
 * delivers it to the workspace's endpoints. Reads the platform database and the ERP directly
 * (DATABASE_URL, ERP_URL, SECRETS_KEY), like the ERP's own users, not the ops API.
 */
import type { Command } from 'commander';
import { config } from '../../lib/config.js';
import { createPool } from '../../lib/db.js';
import { erpApiUserDeps } from '../../domain/erp/api-user.js';
import { postCustomerInvoice } from '../../domain/erp/customer-invoice.js';
import { routedTenants, tenantWithRoute } from '../../domain/tenants/http-routes.js';
import { AppError } from '../../lib/errors.js';
import { outputOption, positiveNumber, tenantName } from '../arguments.js';

export function register(program: Command) {
  const erp = program
    .command('erp')
    .description("act in a tenant's ERP as its accountant (to see events reach webhooks)");
  erp
    .command('post-invoice')
    .description(
      "create and post a customer invoice in the tenant's ERP: its automation rule sends invoice.posted, delivered to the workspace's webhooks",
    )
    .argument('<tenant>', 'tenant name', tenantName)
    .option('--amount <amount>', 'the invoice total (one line, no tax)', positiveNumber, 100)
    .option('--label <text>', 'the line label', 'Consulting (posted with the plana CLI)')
    .addOption(outputOption(['text', 'json']))
    .action(async (tenant: string, opts: { amount: number; label: string; output: string }) => {
      const cfg = config();
      const pool = createPool(cfg.DATABASE_URL, 1);
      try {
        const route = (await routedTenants(pool)).find((r) => r.tenant === tenant);
        if (!route) {
          // exit code 4 for a tenant that does not exist; 1 for one whose ERP is not routed (yet, or any more)
          if (!(await tenantWithRoute(pool, tenant)))
            throw new AppError('NOT_FOUND', `tenant ${tenant} does not exist (npm run cli -- get tenants lists them)`);
          throw new Error(`tenant ${tenant} has no ERP route: is it provisioned? (npm run cli -- get tenants)`);
        }
        const invoice = await postCustomerInvoice(erpApiUserDeps(cfg, pool), {
          database: route.database,
          amount: opts.amount,
          label: opts.label,
        });
        if (opts.output === 'json')
          return console.log(JSON.stringify({ tenant, workspace: route.workspace, invoice }, null, 2));
        console.log(
          `Posted invoice ${invoice.name} (id ${invoice.id}) in the ERP of tenant ${tenant}: ${invoice.amountTotal} ${invoice.currency}, customer ${invoice.partner}.`,
        );
        console.log(
          `  The ERP's rule "Plana: invoice.posted" sent it to the events service; the webhook dispatcher delivers it`,
        );
        console.log(
          `  to the endpoints of workspace ${route.workspace ?? tenant} that take invoice.posted (event id account.move:${invoice.id}:posted).`,
        );
        console.log(
          "  Look at: GET /api/portal/webhooks/<endpoint>/attempts (the portal's Webhooks page), the events stream",
        );
        console.log(
          '  (GET /api/v1/events/info), and for a failed delivery the retry workflow of its endpoint, webhook-endpoint-retries-<endpoint>, in the Temporal UI.',
        );
      } finally {
        await pool.end();
      }
    });
}
