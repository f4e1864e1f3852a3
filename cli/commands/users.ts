/**
 * `users add`: add a user to a workspace with a role, through the ops API (POST /api/ops/users).
 * The password comes from PLANA_USER_PASSWORD or, on a terminal, a prompt that does not echo; it
 * never appears on the command line (shell history, `ps`).
 */
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { Option, type Command } from 'commander';
import { outputOption, pattern, tenantName } from '../arguments.js';
import { opsRequest } from '../ops-client.js';

async function promptHidden(question: string): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk, _enc, done) {
      if (!muted) process.stdout.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  return new Promise((resolve) => {
    rl.question(question, (answer) => {
      rl.close();
      process.stdout.write('\n');
      resolve(answer);
    });
    muted = true;
  });
}

export function register(program: Command) {
  const users = program.command('users').description('people who log in to the account portal');
  users
    .command('add')
    .description('add a user to a workspace with a role (creates the user when the e-mail is new)')
    .requiredOption('--workspace <slug>', 'workspace slug', tenantName)
    .requiredOption(
      '--email <email>',
      'e-mail address (the login)',
      pattern(/^[^@\s]+@[^@\s]+\.[^@\s]+$/, 'It must be an e-mail address such as ada@example.com.'),
    )
    .addOption(new Option('--role <role>', 'admin or member').choices(['admin', 'member']).default('member'))
    .option('--name <name>', 'display name')
    .option('--no-password', 'do not set a password (e.g. the user logs in with OIDC, or already has an account)')
    .option('--reset-password', "replace an existing user's password")
    .addOption(outputOption(['text', 'json']))
    .action(
      async (opts: {
        workspace: string;
        email: string;
        role: string;
        name?: string;
        password: boolean;
        resetPassword?: boolean;
        output: string;
      }) => {
        let password: string | undefined;
        if (opts.password) {
          password = process.env.PLANA_USER_PASSWORD;
          if (!password && process.stdin.isTTY)
            password = await promptHidden(`Password for ${opts.email} (at least 12 characters): `);
          if (!password)
            throw new Error(
              'no password: set PLANA_USER_PASSWORD, run on a terminal to be prompted, or pass --no-password',
            );
        }
        const added = await opsRequest<{
          user: { id: string; email: string };
          workspace: string;
          role: string;
          userCreated: boolean;
          passwordSet: boolean;
        }>(
          'POST',
          '/api/ops/users',
          {
            workspace: opts.workspace,
            email: opts.email,
            role: opts.role,
            name: opts.name,
            password,
            resetPassword: opts.resetPassword,
          },
          {
            'body.workspace': '--workspace',
            'body.email': '--email',
            'body.role': '--role',
            'body.name': '--name',
            'body.password': 'the password (PLANA_USER_PASSWORD or the prompt)',
            'body.resetPassword': '--reset-password',
          },
        );
        if (opts.output === 'json') return console.log(JSON.stringify(added, null, 2));
        console.log(`${added.userCreated ? 'Created' : 'Updated'} user ${added.user.email} (${added.user.id}).`);
        console.log(`  workspace: ${added.workspace}, role: ${added.role}${added.passwordSet ? ', password set' : ''}`);
      },
    );
}
