/**
 * The per-workspace execution log of Workspace API calls: `logs <workspace>` reads it from the log
 * store (through the ops API), `execution-log prune` applies PostgreSQL's retention now (drop day
 * partitions past 90 days).
 */
import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { outputOption, pattern, tenantName } from '../arguments.js';
import { plainTable } from '../table.js';
import type { StoredCall } from '../../domain/access/execution-log-store.js';

export function register(program: Command) {
  program
    .command('logs')
    .description("a workspace's execution log from the log store: its API calls, newest first")
    .argument('<workspace>', 'workspace slug', tenantName)
    .option(
      '--since <duration>',
      'how far back: 30m, 1h, 7d (up to 90d)',
      pattern(/^[1-9][0-9]{0,5}[smhdw]$/, 'It must be a number and a unit (s, m, h, d, w), e.g. 1h or 7d.'),
      '1h',
    )
    .option('--route <text>', 'only routes containing this, e.g. /api/v1/erp')
    .option(
      '--status <code>',
      'only calls answered with this status',
      pattern(/^[1-5][0-9]{2}$/, 'It is an HTTP status such as 500.'),
    )
    .option(
      '--request <id>',
      "only the call with this request id (a problem body's requestId, which is its trace id)",
      pattern(/^[\w.-]{1,64}$/, "It is a request id as a problem body's requestId gives it."),
    )
    .option(
      '--limit <n>',
      'at most this many calls',
      pattern(/^[1-9][0-9]{0,3}$/, 'It is a number from 1 to 1000.'),
      '100',
    )
    .addOption(outputOption(['text', 'json']))
    .action(
      async (
        workspace: string,
        o: { since: string; route?: string; status?: string; request?: string; limit: string; output: string },
      ) => {
        const query = new URLSearchParams({ since: o.since, limit: o.limit });
        if (o.route) query.set('route', o.route);
        if (o.status) query.set('status', o.status);
        if (o.request) query.set('requestId', o.request);
        const { items } = await opsRequest<{ items: StoredCall[] }>(
          'GET',
          `/api/ops/workspaces/${encodeURIComponent(workspace)}/execution-log?${query}`,
          undefined,
          {
            'params.slug': '<workspace>',
            'querystring.since': '--since',
            'querystring.route': '--route',
            'querystring.status': '--status',
            'querystring.requestId': '--request',
            'querystring.limit': '--limit',
          },
        );
        if (o.output === 'json') return console.log(JSON.stringify(items, null, 2));
        if (!items.length) return console.log(`No calls of ${workspace} in the last ${o.since}.`);
        const table = plainTable(['TIME', 'KEY', 'METHOD', 'ROUTE', 'STATUS', 'LATENCY', 'REQUEST ID']);
        for (const c of items)
          table.push([
            c.occurredAt,
            c.keyPrefix,
            c.method,
            c.route,
            c.status,
            `${c.latencyMs.toFixed(1)} ms`,
            c.requestId,
          ]);
        console.log(table.toString());
      },
    );

  program
    .command('execution-log')
    .description('the per-workspace execution log of Workspace API calls in PostgreSQL')
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
