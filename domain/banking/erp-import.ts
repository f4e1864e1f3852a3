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
import { createErpClient, ErpFault, ErpUnreachable, type ErpClient } from '../erp/client.js';
import { ensureErpBankImportUser, erpApiUserDeps, loadErpCredentials } from '../erp/api-user.js';
import type { BankingClient } from './client.js';
import { tenantWithRoute, type TenantRoute } from '../tenants/http-routes.js';

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

type ImportDeps = { pool: pg.Pool; config: Config; banking: BankingClient };

/** A bank statement line as `account.bank.statement.line` takes it. */
interface StatementLine {
  unique_import_id: string;
  date: string;
  amount: number;
  payment_ref: string;
  journal_id: number;
}

export async function importBookedTransactions(deps: ImportDeps, req: ImportRequest): Promise<ImportResult> {
  const { workspaceId, route } = await importTarget(deps.pool, req.tenant);
  const booked = await bookedTransactions(deps.banking, workspaceId, req);
  const erp = await bankImportClient(deps, req.tenant, route);
  try {
    const journalId =
      req.journalId ??
      (await erp.executeKw<number[]>('account.journal', 'search', [[['type', '=', 'bank']]], { limit: 1 }))[0];
    if (!journalId)
      throw new AppError('CONFLICT', `The ERP of tenant "${req.tenant}" has no bank journal to import into.`);
    const lines = booked.map((t) => statementLine(t, req, journalId));
    const existing = await alreadyImported(erp, lines);
    const imported = await createLines(
      erp,
      lines.filter((l) => !existing.has(l.unique_import_id)),
    );
    const { tenant, bankId, accountId } = req;
    return { tenant, bankId, accountId, journalId, booked: lines.length, imported, skipped: lines.length - imported };
  } catch (err) {
    throw erpImportError(err, req.tenant);
  }
}

/** The tenant's workspace (whose consent reads the bank) and ERP route; 404 or 409 without them. */
async function importTarget(pool: pg.Pool, name: string): Promise<{ workspaceId: string; route: TenantRoute }> {
  const tenant = await tenantWithRoute(pool, name);
  if (!tenant) throw new AppError('NOT_FOUND', `No tenant "${name}".`);
  const { workspaceId, route } = tenant;
  if (!workspaceId)
    throw new AppError('CONFLICT', `Tenant "${name}" belongs to no workspace, so it holds no bank consent.`);
  if (!route) throw new AppError('CONFLICT', `The ERP of tenant "${name}" is not provisioned yet (no route).`);
  return { workspaceId, route };
}

/** The account's booked transactions from the banking service, those with an id, an amount and a date. */
async function bookedTransactions(banking: BankingClient, workspaceId: string, req: ImportRequest): Promise<Booked[]> {
  const { body } = await banking.call<{ transactions?: { booked?: Booked[] } }>({
    method: 'GET',
    path: `/banking/${req.bankId}/accounts/${encodeURIComponent(req.accountId)}/transactions`,
    workspaceId,
    query: { bookingStatus: 'booked', dateFrom: req.dateFrom, dateTo: req.dateTo, consentId: req.consentId },
  });
  return (body.transactions?.booked ?? []).filter(
    (t) => (t.transactionId ?? t.entryReference) && t.transactionAmount?.amount && (t.bookingDate ?? t.valueDate),
  );
}

/** A client of the tenant's ERP as its bank import user (made on first use). */
async function bankImportClient(deps: ImportDeps, tenant: string, route: TenantRoute): Promise<ErpClient> {
  await ensureErpBankImportUser(erpApiUserDeps(deps.config, deps.pool), { tenant, database: route.database });
  const credentials = (await loadErpCredentials(deps.pool, deps.config.SECRETS_KEY, tenant, 'bank-import'))!;
  return createErpClient({
    baseUrl: deps.config.ERP_URL,
    host: route.host,
    db: route.database,
    login: credentials.login,
    password: credentials.password,
  });
}

function statementLine(t: Booked, req: ImportRequest, journalId: number): StatementLine {
  const id = (t.transactionId ?? t.entryReference)!;
  const party = t.debtorName ?? t.creditorName;
  return {
    unique_import_id: importId(req.bankId, req.accountId, id),
    date: (t.bookingDate ?? t.valueDate)!,
    amount: Number(t.transactionAmount!.amount),
    payment_ref: (t.remittanceInformationUnstructured ?? party ?? id).slice(0, 500),
    journal_id: journalId,
  };
}

/** The lines' import ids the ERP has already. */
async function alreadyImported(erp: ErpClient, lines: StatementLine[]): Promise<Set<string>> {
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
  return existing;
}

const importedBefore = (err: unknown) => err instanceof ErpFault && err.faultString.includes('imported only once');

/** Creates the lines at once; answers how many were created. */
async function createLines(erp: ErpClient, todo: StatementLine[]): Promise<number> {
  if (!todo.length) return 0;
  try {
    await erp.executeKw('account.bank.statement.line', 'create', [todo]);
    return todo.length;
  } catch (err) {
    // another import got some of them first: one by one, skipping what is there
    if (!importedBefore(err)) throw err;
    let imported = 0;
    for (const line of todo) {
      try {
        await erp.executeKw('account.bank.statement.line', 'create', [[line]]);
        imported++;
      } catch (one) {
        if (!importedBefore(one)) throw one;
      }
    }
    return imported;
  }
}

/** An ERP failure in the caller's terms: a refusal is 502, a timeout 504, unreachable 503. */
function erpImportError(err: unknown, tenant: string): unknown {
  if (err instanceof ErpFault)
    return new AppError(
      'BAD_GATEWAY',
      `The ERP of tenant "${tenant}" refused the import (fault ${err.code}): ${err.message.slice(0, 300)}`,
    );
  if (err instanceof ErpUnreachable)
    return new AppError(err.reason === 'timeout' ? 'GATEWAY_TIMEOUT' : 'UNAVAILABLE', err.message);
  return err;
}
