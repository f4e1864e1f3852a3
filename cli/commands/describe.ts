import type { Command } from 'commander';
import { tenantClientApi } from '../kube-client.js';
import { describeTenant, tenantResource } from '../tenant-output.js';
import { outputOption, tenantName } from '../arguments.js';

export function register(program: Command) {
  program
    .command('describe')
    .description('a TenantClient in detail: conditions, per-resource states, its Events, Temporal UI link')
    .argument('<resource>', 'tenant', tenantResource)
    .argument('<name>', 'the tenant name', tenantName)
    .addOption(outputOption(['text', 'json']))
    .action(async (_resource: string, name: string, opts: { output: string }) => {
      const api = tenantClientApi();
      const obj = await api.get(name);
      if (opts.output === 'json') return console.log(JSON.stringify(obj, null, 2));
      console.log(describeTenant(obj, await api.events(name)));
    });
}
