/**
 * Booked bank transactions into the tenant's ERP as bank statement lines (Odoo
 * `account.bank.statement.line` over XML-RPC), so the dashboards' unreconciled bank lines are the
 * bank's. Idempotent per transaction: each line carries `unique_import_id`
 * `psd2:<bank>:<account>:<transactionId>` (Odoo keeps it unique); ids already in the ERP are skipped,
 * and a concurrent import that got there first is skipped too.
 *
 * The transactions come from the banking service with the workspace's consent (as the Workspace
 * API reads them); the lines are written by the tenant's bank import user (Accounting / Bookkeeper,
 * domain/erp/api-user.ts), never by the read-only dashboards user.
 */
import type pg from 'pg';
import { AppError } from '../../lib/errors.js';
import type { Config } from '../../lib/config.js';
import { createErpClient, ErpFault, ErpUnreachable } from '../erp/client.js';
import { ensureErpBankImportUser, erpApiUserDeps, loadErpCredentials } from '../erp/api-user.js';
import type { BankingClient } from './client.js';
import { tenantWithRoute } from '../tenants/http-routes.js';

export interface ImportRequest {
  tenant: string;
  bankId: string;
  accountId: string;
  dateFrom?: string;
  dateTo?: string;
  consentId?: string;
  /** The ERP bank journal (account.journal id); default: the tenant's first bank journal. */
  journalId?: number;
}

export interface ImportResult {
  tenant: string;
  bankId: string;
  accountId: string;
  journalId: number;
  booked: number;
  imported: number;
  skipped: number;
}

interface Booked {
  transactionId?: string;
  entryReference?: string;
  bookingDate?: string;
  valueDate?: string;
  transactionAmount?: { currency?: string; amount?: string };
  remittanceInformationUnstructured?: string;
  creditorName?: string;
  debtorName?: string;
}

export const importId = (bankId: string, accountId: string, transactionId: string) =>
  `psd2:${bankId}:${accountId}:${transactionId}`;

export async function importBookedTransactions(
  deps: { pool: pg.Pool; config: Config; banking: BankingClient },
  req: ImportRequest,
): Promise<ImportResult> {
  const tenant = await tenantWithRoute(deps.pool, req.tenant);
  if (!tenant) throw new AppError('NOT_FOUND', `No tenant "${req.tenant}".`);
  const { workspaceId, route } = tenant;
  if (!workspaceId)
    throw new AppError('CONFLICT', `Tenant "${req.tenant}" belongs to no workspace, so it holds no bank consent.`);
  if (!route) throw new AppError('CONFLICT', `The ERP of tenant "${req.tenant}" is not provisioned yet (no route).`);

  const { body } = await deps.banking.call<{ transactions?: { booked?: Booked[] } }>({
    method: 'GET',
    path: `/banking/${req.bankId}/accounts/${encodeURIComponent(req.accountId)}/transactions`,
    workspaceId,
    query: { bookingStatus: 'booked', dateFrom: req.dateFrom, dateTo: req.dateTo, consentId: req.consentId },
  });
  const booked = (body.transactions?.booked ?? []).filter(
    (t) => (t.transactionId ?? t.entryReference) && t.transactionAmount?.amount && (t.bookingDate ?? t.valueDate),
  );

  await ensureErpBankImportUser(erpApiUserDeps(deps.config, deps.pool), {
    tenant: req.tenant,
    database: route.database,
  });
  const credentials = (await loadErpCredentials(deps.pool, deps.config.SECRETS_KEY, req.tenant, 'bank-import'))!;
  const erp = createErpClient({
    baseUrl: deps.config.ERP_URL,
    host: route.host,
    db: route.database,
    login: credentials.login,
    password: credentials.password,
  });

  try {
    const journalId =
      req.journalId ??
      (await erp.executeKw<number[]>('account.journal', 'search', [[['type', '=', 'bank']]], { limit: 1 }))[0];
    if (!journalId)
      throw new AppError('CONFLICT', `The ERP of tenant "${req.tenant}" has no bank journal to import into.`);
    const lines = booked.map((t) => {
      const id = (t.transactionId ?? t.entryReference)!;
      const party = t.debtorName ?? t.creditorName;
      return {
        unique_import_id: importId(req.bankId, req.accountId, id),
        date: (t.bookingDate ?? t.valueDate)!,
        amount: Number(t.transactionAmount!.amount),
        payment_ref: (t.remittanceInformationUnstructured ?? party ?? id).slice(0, 500),
        journal_id: journalId,
      };
    });
    const existing = new Set<string>();
    // in slices, so a long period does not make one enormous domain
    for (let i = 0; i < lines.length; i += 500) {
      const ids = lines.slice(i, i + 500).map((l) => l.unique_import_id);
      const found = await erp.executeKw<{ unique_import_id: string }[]>(
        'account.bank.statement.line',
        'search_read',
        [[['unique_import_id', 'in', ids]]],
        { fields: ['unique_import_id'] },
      );
      for (const f of found) existing.add(f.unique_import_id);
    }
    const todo = lines.filter((l) => !existing.has(l.unique_import_id));
    let imported = 0;
    if (todo.length) {
      try {
        await erp.executeKw('account.bank.statement.line', 'create', [todo]);
        imported = todo.length;
      } catch (err) {
        // another import got some of them first: one by one, skipping what is there
        if (!(err instanceof ErpFault) || !err.faultString.includes('imported only once')) throw err;
        for (const line of todo) {
          try {
            await erp.executeKw('account.bank.statement.line', 'create', [[line]]);
            imported++;
          } catch (one) {
            if (!(one instanceof ErpFault) || !one.faultString.includes('imported only once')) throw one;
          }
        }
      }
    }
    return {
      tenant: req.tenant,
      bankId: req.bankId,
      accountId: req.accountId,
      journalId,
      booked: lines.length,
      imported,
      skipped: lines.length - imported,
    };
  } catch (err) {
    if (err instanceof ErpFault)
      throw new AppError(
        'BAD_GATEWAY',
        `The ERP of tenant "${req.tenant}" refused the import (fault ${err.code}): ${err.message.slice(0, 300)}`,
      );
    if (err instanceof ErpUnreachable)
      throw new AppError(err.reason === 'timeout' ? 'GATEWAY_TIMEOUT' : 'UNAVAILABLE', err.message);
    throw err;
  }
}
