import { Option, type Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { outputOption, serviceName } from '../arguments.js';

export function register(program: Command) {
  program
    .command('rotate-key')
    .description('rotate the service key of a caller → target pair (workflow rotate:<caller>:<target>:<n>)')
    .argument('<caller>', 'the consumer, e.g. worker', serviceName)
    .argument('<target>', 'the service it calls, e.g. events', serviceName)
    .addOption(
      new Option('--reason <reason>', 'why: annual, or exposure (a suspected exposure)').choices([
        'annual',
        'exposure',
      ]),
    )
    .addOption(outputOption(['text', 'json']))
    .action(async (caller: string, target: string, opts: { reason?: string; output: string }) => {
      const started = await opsRequest<{ workflowId: string; reason: string; temporalUiUrl: string }>(
        'POST',
        `/api/ops/service-keys/${encodeURIComponent(caller)}/${encodeURIComponent(target)}/rotate`,
        opts.reason ? { reason: opts.reason } : {},
        { 'body.reason': '--reason', 'params.caller': '<caller>', 'params.target': '<target>' },
      );
      if (opts.output === 'json') return console.log(JSON.stringify(started, null, 2));
      console.log(`Rotation of the ${caller} → ${target} service key started (${started.reason}).`);
      console.log(`  workflow id: ${started.workflowId}`);
      console.log(`  Temporal UI: ${started.temporalUiUrl}`);
    });
}
