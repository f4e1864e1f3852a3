/**
 * The operator CLI: `npm run cli -- <command>`. Each command lives in cli/commands/<name>.ts and
 * exports `register(program)`.
 */
import { Command, CommanderError } from 'commander';
import { AppError } from '../lib/errors.js';
import { OpsApiError } from './ops-client.js';
import { register as resendWelcome } from './commands/resend-welcome.js';
import { register as restore } from './commands/restore.js';
import { register as apply } from './commands/apply.js';
import { register as get } from './commands/get.js';
import { register as describe } from './commands/describe.js';
import { register as tenantActions } from './commands/tenant-actions.js';
import { register as users } from './commands/users.js';
import { register as rateLimits } from './commands/rate-limits.js';
import { register as executionLog } from './commands/execution-log.js';
import { register as serviceKeys } from './commands/service-keys.js';
import { register as rotateKey } from './commands/rotate-key.js';
import { register as signingKeys } from './commands/signing-keys.js';
import { register as webhooks } from './commands/webhooks.js';
import { register as bankImport } from './commands/bank-import.js';
import { register as erp } from './commands/erp.js';

export function buildCli(): Command {
  const program = new Command('plana').description('Operate the workspace platform').exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  resendWelcome(program);
  restore(program);
  rotateKey(program);
  signingKeys(program);
  apply(program);
  get(program);
  describe(program);
  tenantActions(program);
  users(program);
  rateLimits(program);
  executionLog(program);
  serviceKeys(program);
  webhooks(program);
  bankImport(program);
  erp(program);
  return program;
}

/**
 * Runs one command line and returns its exit code: 0; 4 when the API (the ops API, or the
 * Kubernetes API for TenantClients) says the thing does not exist; 1 for anything else (a usage mistake as commander says it, else `error: …`).
 */
export async function runCli(argv: string[]): Promise<number> {
  try {
    await buildCli().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode; // commander has said what was wrong (or shown the help)
    console.error(`error: ${(err as Error).message}`);
    if (err instanceof OpsApiError) return err.status === 404 ? 4 : 1;
    if (err instanceof AppError) return err.code === 'NOT_FOUND' ? 4 : 1;
    return 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exit(await runCli(process.argv.slice(2)));
