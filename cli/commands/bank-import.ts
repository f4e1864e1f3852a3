/**
 * `bank-import <tenant> <bankId> <accountId>`: import a bank account's booked transactions into the
 * tenant's ERP as bank statement lines, through the ops API (POST /api/ops/banking/import).
 * Idempotent: a second run imports only transactions that are new.
 */
import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';
import { isoDate, outputOption, pattern, positiveInteger, tenantName, uuid } from '../arguments.js';

export function register(program: Command) {
  program
    .command('bank-import')
    .description("import a bank account's booked transactions into the tenant ERP as bank statement lines (idempotent)")
    .argument('<tenant>', 'tenant name', tenantName)
    .argument(
      '<bankId>',
      'bank adapter id (GET /api/banking/adapters)',
      pattern(
        /^[a-z0-9-]{1,40}$/,
        'A bank id is lowercase letters, digits and hyphens (GET /api/banking/adapters lists them).',
      ),
    )
    .argument(
      '<accountId>',
      "the bank's account resource id",
      pattern(/^[A-Za-z0-9._-]{1,100}$/, 'An account id is letters, digits, ".", "_" and "-", at most 100.'),
    )
    .option('--from <date>', "first booking date (YYYY-MM-DD; default: the bank's, 90 days back)", isoDate)
    .option('--to <date>', 'last booking date (YYYY-MM-DD)', isoDate)
    .option(
      '--consent <id>',
      "the workspace's consent to read with (default: its newest valid one)",
      uuid('A consent id'),
    )
    .option('--journal <id>', 'ERP bank journal id (default: the first bank journal)', positiveInteger)
    .addOption(outputOption(['text', 'json']))
    .action(
      async (
        tenant: string,
        bankId: string,
        accountId: string,
        opts: { from?: string; to?: string; consent?: string; journal?: number; output: string },
      ) => {
        const result = await opsRequest<{ booked: number; imported: number; skipped: number; journalId: number }>(
          'POST',
          '/api/ops/banking/import',
          {
            tenant,
            bankId,
            accountId,
            dateFrom: opts.from,
            dateTo: opts.to,
            consentId: opts.consent,
            journalId: opts.journal,
          },
          {
            'body.tenant': '<tenant>',
            'body.bankId': '<bankId>',
            'body.accountId': '<accountId>',
            'body.dateFrom': '--from',
            'body.dateTo': '--to',
            'body.consentId': '--consent',
            'body.journalId': '--journal',
          },
        );
        if (opts.output === 'json') return console.log(JSON.stringify(result, null, 2));
        console.log(
          `${tenant}: ${result.imported} new bank statement line(s) in journal ${result.journalId}, ${result.skipped} already there (${result.booked} booked at ${bankId})`,
        );
      },
    );
}
