import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parseTenantClient } from '../../domain/tenants/tenant-client.js';
import { opsRequest } from '../ops-client.js';
import { outputOption } from '../arguments.js';

export function register(program: Command) {
  program
    .command('apply')
    .description('create or update a TenantClient from a YAML or JSON file (idempotent, like kubectl apply)')
    .requiredOption('-f, --filename <file>', 'the TenantClient resource (YAML or JSON; - for stdin)')
    .addOption(outputOption(['text', 'json']))
    .action(async (opts: { filename: string; output: string }) => {
      const text = opts.filename === '-' ? await readStdin() : await readFile(opts.filename, 'utf8');
      const parsed = parseTenantClient(text);
      if (!parsed.ok) {
        const lines = parsed.problems.map((p) => `  ${p.field}: ${p.message}`);
        throw new Error(`${opts.filename} is not a valid TenantClient:\n${lines.join('\n')}`);
      }
      const applied = await opsRequest<{
        result: string;
        name: string;
        generation: number;
        workflowId: string;
        temporalUiUrl: string;
      }>('POST', '/api/ops/tenant-clients', parsed.value);
      if (opts.output === 'json') return console.log(JSON.stringify(applied, null, 2));
      console.log(`tenantclient.plana.dev/${applied.name} ${applied.result} (generation ${applied.generation})`);
      console.log(`  workflow ${applied.workflowId}: ${applied.temporalUiUrl}`);
    });
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
