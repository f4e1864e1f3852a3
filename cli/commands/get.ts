import type { Command } from 'commander';
import type { TenantClientResource, TenantClientSummary } from '../../domain/tenants/operator-actions.js';
import { opsRequest } from '../ops-client.js';
import { tenantResource, tenantTable } from '../tenant-output.js';
import { outputOption, tenantName } from '../arguments.js';

export function register(program: Command) {
  program
    .command('get')
    .description('list TenantClients (NAME, SYNCED, READY, PHASE, AGE), or one of them')
    .argument('<resource>', 'tenants', tenantResource)
    .argument('[name]', 'a tenant name', tenantName)
    .addOption(outputOption(['table', 'json']))
    .action(async (_resource: string, name: string | undefined, opts: { output: string }) => {
      if (name) {
        const path = `/api/ops/tenant-clients/${encodeURIComponent(name)}`;
        if (opts.output === 'json')
          return console.log(JSON.stringify(await opsRequest<TenantClientResource>('GET', path), null, 2));
        return console.log(tenantTable([await opsRequest<TenantClientSummary>('GET', `${path}?view=summary`)]));
      }
      const { items } = await opsRequest<{ items: TenantClientSummary[] }>('GET', '/api/ops/tenant-clients');
      if (opts.output === 'json') return console.log(JSON.stringify({ items }, null, 2));
      console.log(items.length ? tenantTable(items) : 'No TenantClients found.');
    });
}
