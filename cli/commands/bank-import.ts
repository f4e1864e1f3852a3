/**
 * `bank-import <tenant> <bankId> <accountId>`: import a bank account's booked transactions into the
 * tenant's ERP as bank statement lines, through the ops API (POST /api/ops/banking/import).
 * Idempotent: a second run imports only transactions that are new.
 */
import type { Command } from 'commander';
import { opsRequest } from '../ops-client.js';

export function register(program: Command) {
  program
    .command('bank-import')
    .description("import a bank account's booked transactions into the tenant ERP as bank statement lines (idempotent)")
    .argument('<tenant>', 'tenant name')
    .argument('<bankId>', 'bank adapter id (GET /api/banking/adapters)')
    .argument('<accountId>', "the bank's account resource id")
    .option('--from <date>', 'first booking date (YYYY-MM-DD; default: the bank\'s, 90 days back)')
    .option('--to <date>', 'last booking date (YYYY-MM-DD)')
    .option('--consent <id>', "the workspace's consent to read with (default: its newest valid one)")
    .option('--journal <id>', 'ERP bank journal id (default: the first bank journal)')
    .option('-o, --output <format>', 'text or json', 'text')
    .action(async (tenant: string, bankId: string, accountId: string, opts: { from?: string; to?: string; consent?: string; journal?: string; output: string }) => {
      const result = await opsRequest<{ booked: number; imported: number; skipped: number; journalId: number }>('POST', '/api/ops/banking/import', {
        tenant,
        bankId,
        accountId,
        dateFrom: opts.from,
        dateTo: opts.to,
        consentId: opts.consent,
        journalId: opts.journal === undefined ? undefined : Number(opts.journal),
      });
      if (opts.output === 'json') return console.log(JSON.stringify(result, null, 2));
      console.log(`${tenant}: ${result.imported} new bank statement line(s) in journal ${result.journalId}, ${result.skipped} already there (${result.booked} booked at ${bankId})`);
    });
}
