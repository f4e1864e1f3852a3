import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { outputOption, tenantName } from '../arguments.js';

export function register(program: Command) {
  program
    .command('resend-welcome')
    .description('send the welcome e-mail of a tenant again (support)')
    .argument('<tenant>', 'tenant name (= subdomain)', tenantName)
    .addOption(outputOption(['text', 'json']))
    .action(async (tenant: string, opts: { output: string }) => {
      const started = await opsRequest<{ workflowId: string; email: string; workspace: string; temporalUiUrl: string }>(
        'POST',
        `/api/ops/tenants/${encodeURIComponent(tenant)}/welcome`,
        undefined,
        { 'params.name': '<tenant>' },
      );
      if (opts.output === 'json') return console.log(JSON.stringify(started, null, 2));
      console.log(`Welcome e-mail for tenant ${tenant} started.`);
      console.log(`  recipient:   ${started.email} (workspace ${started.workspace})`);
      console.log(`  workflow id: ${started.workflowId}`);
      console.log(`  Temporal UI: ${started.temporalUiUrl}`);
    });
}
