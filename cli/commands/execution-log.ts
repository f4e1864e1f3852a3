/** `execution-log prune`: apply the execution-log retention now (drop day partitions past 90 days). */
import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';

export function register(program: Command) {
  const cmd = program.command('execution-log').description('the per-workspace execution log of Workspace API calls');
  cmd
    .command('prune')
    .description('drop the day partitions older than the retention and create the next days')
    .action(async () => {
      const r = await opsRequest<{ retentionDays: number; dropped: string[] }>(
        'POST',
        '/api/ops/execution-log/retention',
      );
      console.log(
        `Retention ${r.retentionDays} days: ${r.dropped.length ? `dropped ${r.dropped.join(', ')}` : 'nothing to drop'}.`,
      );
    });
}
