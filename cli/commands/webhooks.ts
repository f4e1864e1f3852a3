import { Option, type Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { isoTime, outputOption, pattern, uuid } from '../arguments.js';

export function register(program: Command) {
  program
    .command('replay-webhooks')
    .description(
      'send a webhook message again (--message, whatever its state), or every FAILED message of an endpoint in a time range (--since; delivered ones are not sent again), through the retry workflow of the endpoint, webhook-endpoint-retries-<endpoint>',
    )
    .argument('<endpointId>', 'the webhook endpoint id', uuid('An endpoint id'))
    .addOption(
      new Option('--message <messageId>', 'one message (msg_…), delivered or not')
        .argParser(
          pattern(
            /^msg_[A-Za-z0-9_-]{1,96}$/,
            'A message id looks like msg_… (the webhook-id header, or GET …/attempts).',
          ),
        )
        .conflicts(['since', 'until']),
    )
    .option('--since <time>', 'failed messages created at or after this ISO time', isoTime)
    .option('--until <time>', 'and before this ISO time (default: now)', isoTime)
    .addOption(outputOption(['text', 'json']))
    .action(
      async (
        endpointId: string,
        opts: { message?: string; since?: string; until?: string; output: string },
        cmd: Command,
      ) => {
        if (!opts.message && !opts.since)
          cmd.error('error: say what to replay: --message <id>, or --since <time> [--until <time>]');
        const body = opts.message
          ? { messageId: opts.message }
          : { since: opts.since, ...(opts.until ? { until: opts.until } : {}) };
        const result = await opsRequest<{ replayed: string[]; inProgress: string[]; note?: string }>(
          'POST',
          `/api/ops/webhooks/${encodeURIComponent(endpointId)}/replay`,
          body,
          {
            'params.id': '<endpointId>',
            'body.messageId': '--message',
            'body.since': '--since',
            'body.until': '--until',
          },
        );
        if (opts.output === 'json') return console.log(JSON.stringify(result, null, 2));
        console.log(`Replaying ${result.replayed.length} message(s) to endpoint ${endpointId}.`);
        for (const id of result.replayed) console.log(`  ${id}  workflow webhook-endpoint-retries-${endpointId}`);
        if (result.inProgress.length) console.log(`Already being delivered: ${result.inProgress.join(', ')}`);
        if (result.note) console.log(`Note: ${result.note}`);
      },
    );
}
