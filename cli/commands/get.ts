import type { Command } from 'commander';
import type { TenantClientResource, TenantClientSummary } from '../../domain/tenants/operations.js';
import { opsRequest } from '../ops-client.js';
import { assertTenantResource, tenantTable } from '../tenant-output.js';

export function register(program: Command) {
  program
    .command('get')
    .description('list TenantClients (NAME, SYNCED, READY, PHASE, AGE), or one of them')
    .argument('<resource>', 'tenants')
    .argument('[name]', 'a tenant name')
    .option('-o, --output <format>', 'table or json', 'table')
    .action(async (resource: string, name: string | undefined, opts: { output: string }) => {
      assertTenantResource(resource);
      if (name) {
        const path = `/api/ops/tenant-clients/${encodeURIComponent(name)}`;
        if (opts.output === 'json') return console.log(JSON.stringify(await opsRequest<TenantClientResource>('GET', path), null, 2));
        return console.log(tenantTable([await opsRequest<TenantClientSummary>('GET', `${path}?view=summary`)]));
      }
      const { items } = await opsRequest<{ items: TenantClientSummary[] }>('GET', '/api/ops/tenant-clients');
      if (opts.output === 'json') return console.log(JSON.stringify({ items }, null, 2));
      console.log(items.length ? tenantTable(items) : 'No TenantClients found.');
    });
}
