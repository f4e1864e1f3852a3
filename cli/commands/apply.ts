import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { parseTenantClient } from '../../domain/tenants/tenant-client.js';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';
import { config } from '../../lib/config.js';
import { temporalUiLink } from '../../lib/temporal.js';
import { tenantClientApi } from '../kube-client.js';
import { outputOption } from '../arguments.js';

export function register(program: Command) {
  program
    .command('apply')
    .description('create or update a TenantClient on the Kubernetes API from a YAML or JSON file (like kubectl apply)')
    .requiredOption('-f, --filename <file>', 'the TenantClient resource (YAML or JSON; - for stdin)')
    .addOption(outputOption(['text', 'json']))
    .action(async (opts: { filename: string; output: string }) => {
      const text = opts.filename === '-' ? await readStdin() : await readResourceFile(opts.filename);
      const parsed = parseTenantClient(text);
      if (!parsed.ok) {
        const lines = parsed.problems.map((p) => `  ${p.field}: ${p.message}`);
        throw new Error(`${opts.filename} is not a valid TenantClient:\n${lines.join('\n')}`);
      }
      const { name } = parsed.value.metadata;
      const applied = await tenantClientApi().apply({
        metadata: { name, labels: labelsOf(text) },
        spec: parsed.value.spec,
      });
      const workflowId = tenantWorkflowId(name);
      const answer = { ...applied, name, workflowId, temporalUiUrl: temporalUiLink(config(), workflowId) };
      if (opts.output === 'json') return console.log(JSON.stringify(answer, null, 2));
      console.log(`tenantclient.plana.dev/${name} ${answer.result} (generation ${answer.generation})`);
      console.log(`  workflow ${answer.workflowId}: ${answer.temporalUiUrl}`);
    });
}

/** The resource's metadata.labels as written (a controller's label selector may depend on them). */
function labelsOf(text: string): Record<string, string> | undefined {
  const labels = (parse(text) as { metadata?: { labels?: unknown } }).metadata?.labels;
  if (!labels || typeof labels !== 'object') return undefined;
  return Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, String(v)]));
}

/** The file's text; a file that cannot be read is said in words ("no such file: x.yaml"), not as a raw ENOENT. */
async function readResourceFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`no such file: ${file}`);
    if (code === 'EISDIR') throw new Error(`${file} is a folder, not a file`);
    if (code === 'EACCES') throw new Error(`cannot read ${file}: permission denied`);
    throw new Error(`cannot read ${file}: ${code ?? (err as Error).message}`);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
