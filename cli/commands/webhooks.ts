import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';

export function register(program: Command) {
  program
    .command('replay-webhooks')
    .description('replay a webhook message, or every failed message of an endpoint in a time range (workflows webhook:<endpoint>:<message>)')
    .argument('<endpointId>', 'the webhook endpoint id')
    .option('--message <messageId>', 'one message (msg_…)')
    .option('--since <time>', 'failed messages created at or after this ISO time')
    .option('--until <time>', 'and before this ISO time (default: now)')
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (endpointId: string, opts: { message?: string; since?: string; until?: string; output: string }) => {
      if (!opts.message && !opts.since) throw Object.assign(new Error('say what to replay: --message <id> or --since <time> [--until <time>]'), { exitCode: 2 });
      const body = opts.message ? { messageId: opts.message } : { since: opts.since, ...(opts.until ? { until: opts.until } : {}) };
      const result = await opsRequest<{ replayed: string[]; inProgress: string[] }>('POST', `/api/ops/webhooks/${encodeURIComponent(endpointId)}/replay`, body);
      if (opts.output === 'json') return console.log(JSON.stringify(result, null, 2));
      console.log(`Replaying ${result.replayed.length} message(s) to endpoint ${endpointId}.`);
      for (const id of result.replayed) console.log(`  ${id}  workflow webhook:${endpointId}:${id}`);
      if (result.inProgress.length) console.log(`Already being delivered: ${result.inProgress.join(', ')}`);
    });
}
