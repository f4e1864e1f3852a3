/**
 * `rate-limits get|set|reset <workspace>`: the Workspace API limits of a workspace ("higher limits
 * are granted by arrangement", §8), through the ops API.
 */
import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { positiveInteger, positiveNumber, tenantName } from '../arguments.js';

interface Limits {
  burst: number;
  perSecond: number;
  agentPerMinute: number;
  overridden: boolean;
}

const path = (ws: string) => `/api/ops/workspaces/${encodeURIComponent(ws)}/rate-limits`;
const terms = { 'params.slug': '<workspace>', 'body.burst': '--burst', 'body.perSecond': '--per-second', 'body.agentPerMinute': '--agent-per-minute' };
const show = (ws: string, l: Limits) =>
  console.log(`${ws}: burst ${l.burst}, ${l.perSecond}/s sustained, ${l.agentPerMinute} agent calls/min per key${l.overridden ? ' (override)' : ' (defaults)'}`);

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
    .action(async (ws: string, o: { burst: number; perSecond: number; agentPerMinute: number }) =>
      show(ws, await opsRequest<Limits>('PUT', path(ws), { burst: o.burst, perSecond: o.perSecond, agentPerMinute: o.agentPerMinute }, terms)),
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
