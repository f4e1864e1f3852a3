/** `service-keys`: the caller → target pairs, their key ids, states and last use (never a key). */
import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { age, plainTable } from '../table.js';
import { outputOption } from '../arguments.js';

interface KeyView {
  keyId: string;
  state: string;
  createdAt: string;
  lastUsedAt: string | null;
  useCount: number;
}
interface PairView {
  caller: string;
  target: string;
  live: boolean;
  what: string;
  proof: 'calls' | 'holders' | 'per-run' | 'rules';
  keys: KeyView[];
  rotation: { running: string | null; last: { workflowId: string; outcome: string } | null; next: string | null };
}

export function serviceKeyTable(pairs: PairView[], opts: { all?: boolean } = {}): string {
  const table = plainTable(['CALLER', 'TARGET', 'PROOF', 'KEY ID', 'STATE', 'AGE', 'LAST USED', 'USES', 'ROTATION']);
  for (const p of pairs) {
    const keys = opts.all ? p.keys : p.keys.filter((k) => k.state !== 'revoked');
    // on the pair's first line: the running rotation, else the next scheduled one
    const rotation = p.rotation.running
      ? `running ${p.rotation.running}`
      : p.rotation.next
        ? `next ${p.rotation.next.slice(0, 10)}`
        : '';
    if (keys.length === 0)
      table.push([p.caller, p.target, p.proof, '-', p.live ? 'none' : 'planned', '', '', '', rotation]);
    keys.forEach((k, i) => {
      table.push([
        p.caller,
        p.target,
        i === 0 ? p.proof : '',
        k.keyId,
        k.state,
        age(k.createdAt),
        k.lastUsedAt ? `${age(k.lastUsedAt)} ago` : 'never',
        String(k.useCount),
        i === 0 ? rotation : '',
      ]);
    });
  }
  return table.toString();
}

export function register(program: Command) {
  program
    .command('service-keys')
    .description(
      'service keys: caller → target pairs, how a rotation proves the switch (calls, holders, per-run), key ids, states, last use (never the keys)',
    )
    .option('-a, --all', 'also show revoked keys')
    .addOption(outputOption(['table', 'json']))
    .action(async (opts: { all?: boolean; output: string }) => {
      const { pairs } = await opsRequest<{ pairs: PairView[] }>('GET', '/api/ops/service-keys');
      if (opts.output === 'json') return console.log(JSON.stringify({ pairs }, null, 2));
      console.log(serviceKeyTable(pairs, opts));
    });
}
