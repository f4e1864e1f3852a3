/**
 * The platform OpenID provider's signing keys: `signing-keys` lists the published ones (ids and
 * states), `rotate-signing-key` makes a new key that signs from then on, the previous one still
 * published for its grace period (POST /api/ops/oidc-provider/signing-keys/rotate).
 */
import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { outputOption } from '../arguments.js';
import { plainTable } from '../table.js';

interface PublishedKey {
  kid: string;
  state: 'signing' | 'retired';
  createdAt: string;
  unpublishedAt: string | null;
}

function keyRows(keys: PublishedKey[]): string {
  const table = plainTable(['KID', 'STATE', 'CREATED', 'UNPUBLISHED AT']);
  for (const k of keys) table.push([k.kid, k.state, k.createdAt, k.unpublishedAt ?? '-']);
  return table.toString();
}

export function register(program: Command) {
  program
    .command('signing-keys')
    .description("the OpenID provider's published signing keys (ids and states, never a key)")
    .addOption(outputOption(['table', 'json']))
    .action(async (opts: { output: string }) => {
      const { keys } = await opsRequest<{ keys: PublishedKey[] }>('GET', '/api/ops/oidc-provider/signing-keys');
      console.log(opts.output === 'json' ? JSON.stringify(keys, null, 2) : keyRows(keys));
    });
  program
    .command('rotate-signing-key')
    .description("rotate the OpenID provider's signing key (the previous key stays published for its grace period)")
    .addOption(outputOption(['table', 'json']))
    .action(async (opts: { output: string }) => {
      const rotated = await opsRequest<{ kid: string; inUseWithinSeconds: number; keys: PublishedKey[] }>(
        'POST',
        '/api/ops/oidc-provider/signing-keys/rotate',
        {},
      );
      if (opts.output === 'json') return console.log(JSON.stringify(rotated, null, 2));
      console.log(`New signing key ${rotated.kid}: the provider signs with it within ${rotated.inUseWithinSeconds} s.`);
      console.log(keyRows(rotated.keys));
    });
}
