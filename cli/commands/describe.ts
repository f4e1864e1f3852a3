import type { Command } from 'commander';
import type { TenantClientResource } from '../../domain/tenants/operator-actions.js';
import { opsRequest } from '../ops-client.js';
import { describeTenant, tenantResource } from '../tenant-output.js';
import { outputOption, tenantName } from '../arguments.js';

export function register(program: Command) {
  program
    .command('describe')
    .description('a TenantClient in detail: conditions, per-resource states, recent steps, Temporal UI link')
    .argument('<resource>', 'tenant', tenantResource)
    .argument('<name>', 'the tenant name', tenantName)
    .addOption(outputOption(['text', 'json']))
    .action(async (_resource: string, name: string, opts: { output: string }) => {
      const tenant = await opsRequest<TenantClientResource>(
        'GET',
        `/api/ops/tenant-clients/${encodeURIComponent(name)}`,
        undefined,
        { 'params.name': '<name>' },
      );
      console.log(opts.output === 'json' ? JSON.stringify(tenant, null, 2) : describeTenant(tenant));
    });
}
