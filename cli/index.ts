/**
 * The operator CLI: `npm run cli -- <command>`. Each command lives in cli/commands/<name>.ts and
 * exports `register(program)`.
 */
import { Command } from 'commander';
import { OpsApiError } from './ops-client.js';
import { register as resendWelcome } from './commands/resend-welcome.js';

export function buildCli(): Command {
  const program = new Command('plana').description('Operate the workspace platform').exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  resendWelcome(program);
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
