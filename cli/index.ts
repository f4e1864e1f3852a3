/**
 * The operator CLI: `npm run cli -- <command>`. Each command lives in cli/commands/<name>.ts and
 * exports `register(program)`.
 */
import { Command } from 'commander';
import { OpsApiError } from './ops-client.js';
import { register as resendWelcome } from './commands/resend-welcome.js';
import { register as apply } from './commands/apply.js';
import { register as get } from './commands/get.js';
import { register as describe } from './commands/describe.js';
import { register as tenantActions } from './commands/tenant-actions.js';
import { register as users } from './commands/users.js';
import { register as rateLimits } from './commands/rate-limits.js';
import { register as executionLog } from './commands/execution-log.js';
import { register as serviceKeys } from './commands/service-keys.js';
import { register as rotateKey } from './commands/rotate-key.js';
import { register as webhooks } from './commands/webhooks.js';
import { register as bankImport } from './commands/bank-import.js';

export function buildCli(): Command {
  const program = new Command('plana').description('Operate the workspace platform').exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  resendWelcome(program);
  rotateKey(program);
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
  return program;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    await buildCli().parseAsync(process.argv);
  } catch (err) {
    if (err instanceof OpsApiError) {
      console.error(`error: ${err.message}`);
      process.exit(err.status === 404 ? 4 : 1);
    }
    const code = (err as { exitCode?: number }).exitCode;
    if (typeof code === 'number') process.exit(code);
    console.error(`error: ${(err as Error).message}`);
    process.exit(1);
  }
}
