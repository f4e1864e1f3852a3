/**
 * `rate-limits get|set|reset <workspace>`: the Workspace API limits of a workspace ("higher limits
 * are granted by arrangement", §8), through the ops API.
 */
import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { positiveInteger, positiveNumber, tenantName } from '../arguments.js';
import type { Limits as EffectiveLimits } from '../../domain/access/workspace-limits.js';

/** The workspace's limits as the ops API answers them: the effective figures, and whether an override sets them. */
type Limits = EffectiveLimits & { overridden: boolean };

const path = (ws: string) => `/api/ops/workspaces/${encodeURIComponent(ws)}/rate-limits`;
const terms = {
  'params.slug': '<workspace>',
  'body.burst': '--burst',
  'body.perSecond': '--per-second',
  'body.agentPerMinute': '--agent-per-minute',
  'body.workspaceBurst': '--workspace-burst',
  'body.workspacePerSecond': '--workspace-per-second',
  'body.maxApiKeys': '--max-api-keys',
};
const show = (ws: string, l: Limits) =>
  console.log(
    `${ws}: per key burst ${l.burst}, ${l.perSecond}/s sustained, ${l.agentPerMinute} agent calls/min; per workspace (all keys) burst ${l.workspaceBurst}, ${l.workspacePerSecond}/s sustained; at most ${l.maxApiKeys} keys${l.overridden ? ' (override)' : ' (defaults)'}`,
  );

export function register(program: Command) {
  const cmd = program.command('rate-limits').description('per-workspace Workspace API limits');
  cmd
    .command('get')
    .argument('<workspace>', 'workspace slug', tenantName)
    .action(async (ws: string) => show(ws, await opsRequest<Limits>('GET', path(ws), undefined, terms)));
  cmd
    .command('set')
    .argument('<workspace>', 'workspace slug', tenantName)
    .requiredOption('--burst <n>', 'bucket capacity (requests)', positiveInteger)
    .requiredOption('--per-second <n>', 'sustained requests per second', positiveNumber)
    .option('--agent-per-minute <n>', 'agent invocations per minute per key', positiveInteger, 10)
    .option(
      '--workspace-burst <n>',
      'bucket capacity of the workspace, all its keys together (default: the configured one)',
      positiveInteger,
    )
    .option(
      '--workspace-per-second <n>',
      'sustained requests per second of the workspace (default: the configured one)',
      positiveNumber,
    )
    .option(
      '--max-api-keys <n>',
      'the most live API keys the workspace may hold (default: the configured one)',
      positiveInteger,
    )
    .action(
      async (
        ws: string,
        o: {
          burst: number;
          perSecond: number;
          agentPerMinute: number;
          workspaceBurst?: number;
          workspacePerSecond?: number;
          maxApiKeys?: number;
        },
      ) =>
        show(
          ws,
          await opsRequest<Limits>(
            'PUT',
            path(ws),
            {
              burst: o.burst,
              perSecond: o.perSecond,
              agentPerMinute: o.agentPerMinute,
              workspaceBurst: o.workspaceBurst ?? null,
              workspacePerSecond: o.workspacePerSecond ?? null,
              maxApiKeys: o.maxApiKeys ?? null,
            },
            terms,
          ),
        ),
    );
  cmd
    .command('reset')
    .argument('<workspace>', 'workspace slug', tenantName)
    .description('remove the override: back to the defaults')
    .action(async (ws: string) => {
      await opsRequest('DELETE', path(ws), undefined, terms);
      show(ws, await opsRequest<Limits>('GET', path(ws), undefined, terms));
    });
}
