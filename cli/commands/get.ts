import type { Command } from 'commander';
import { tenantClientRow } from '../../domain/tenants/tenant-client-api.js';
import { tenantClientApi } from '../kube-client.js';
import { tenantResource, tenantTable } from '../tenant-output.js';
import { outputOption, tenantName } from '../arguments.js';

export function register(program: Command) {
  program
    .command('get')
    .description('list TenantClients on the Kubernetes API (NAME, SYNCED, READY, PHASE, AGE), or one of them')
    .argument('<resource>', 'tenants', tenantResource)
    .argument('[name]', 'a tenant name', tenantName)
    .addOption(outputOption(['table', 'json']))
    .action(async (_resource: string, name: string | undefined, opts: { output: string }) => {
      const api = tenantClientApi();
      if (name) {
        const obj = await api.get(name);
        return console.log(opts.output === 'json' ? JSON.stringify(obj, null, 2) : tenantTable([tenantClientRow(obj)]));
      }
      const items = await api.list();
      if (opts.output === 'json') return console.log(JSON.stringify({ items }, null, 2));
      console.log(items.length ? tenantTable(items.map(tenantClientRow)) : 'No TenantClients found.');
    });
}
