import type { Command } from 'commander';
import type { TenantClientResource } from '../../domain/tenants/operations.js';
import { opsRequest } from '../ops-client.js';
import { assertTenantResource, describeTenant } from '../tenant-output.js';

export function register(program: Command) {
  program
    .command('describe')
    .description('a TenantClient in detail: conditions, per-resource states, recent steps, Temporal UI link')
    .argument('<resource>', 'tenant')
    .argument('<name>', 'the tenant name')
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (resource: string, name: string, opts: { output: string }) => {
      assertTenantResource(resource);
      const tenant = await opsRequest<TenantClientResource>('GET', `/api/ops/tenant-clients/${encodeURIComponent(name)}`);
      console.log(opts.output === 'json' ? JSON.stringify(tenant, null, 2) : describeTenant(tenant));
    });
}
