/**
 * The bank's books: its accounts and their transactions, derived from the bank id and the day only
 * (a seeded generator), so the same question gets the same answer on every run.
 */
import { createHash } from 'node:crypto';

export interface Account {
  resourceId: string;
  iban: string;
  currency: string;
  name: string;
  product: string;
  cashAccountType: 'CACC' | 'SVGS';
  opening: number;
}

export interface BankTransaction {
  transactionId: string;
  bookingDate?: string;
  valueDate: string;
  transactionAmount: { currency: string; amount: string };
  creditorName?: string;
  debtorName?: string;
  remittanceInformationUnstructured: string;
}

export const day = (d: Date) => d.toISOString().slice(0, 10);
export const addDays = (iso: string, n: number) => day(new Date(Date.parse(`${iso}T00:00:00Z`) + n * 86_400_000));
export const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A number in [0, 1) fixed by its inputs. */
function unit(...parts: (string | number)[]): number {
  return createHash('sha256').update(parts.join('|')).digest().readUInt32BE(0) / 2 ** 32;
}

const COUNTERPARTIES = [
  'Acme Supplies GmbH',
  'Northwind Traders',
  'Globex Services',
  'Initech AG',
  'Umbrella Logistics',
  'Stark Retail',
  'Wayne Consulting',
];

export function bankAccounts(bankId: string): Account[] {
  const digits = (seed: string) => String(Math.floor(unit(bankId, seed) * 1e10)).padStart(10, '0');
  return [
    {
      resourceId: `${bankId}-cur-1`,
      iban: `DE89370400440${digits('cur')}`.slice(0, 22),
      currency: 'EUR',
      name: 'Business current account',
      product: 'Girokonto Business',
      cashAccountType: 'CACC',
      opening: 25_000,
    },
    {
      resourceId: `${bankId}-sav-1`,
      iban: `DE27100777770${digits('sav')}`.slice(0, 22),
      currency: 'EUR',
      name: 'Reserve savings',
      product: 'Tagesgeld',
      cashAccountType: 'SVGS',
      opening: 80_000,
    },
  ];
}

/** The transactions of one account on one day: 0 to 3, fixed by (bank, account, day). */
export function transactionsOn(bankId: string, account: Account, date: string): BankTransaction[] {
  const count =
    account.cashAccountType === 'SVGS'
      ? unit(bankId, account.resourceId, date, 'n') < 0.1
        ? 1
        : 0
      : Math.floor(unit(bankId, account.resourceId, date, 'n') * 4);
  const out: BankTransaction[] = [];
  for (let i = 0; i < count; i++) {
    const incoming = unit(account.resourceId, date, i, 'dir') < 0.45;
    const cents = Math.round((20 + unit(account.resourceId, date, i, 'amt') * 2_480) * 100);
    const amount = ((incoming ? cents : -cents) / 100).toFixed(2);
    const party = COUNTERPARTIES[Math.floor(unit(account.resourceId, date, i, 'who') * COUNTERPARTIES.length)]!;
    out.push({
      transactionId: `${account.resourceId}-${date.replace(/-/g, '')}-${i + 1}`,
      bookingDate: date,
      valueDate: date,
      transactionAmount: { currency: account.currency, amount },
      ...(incoming ? { debtorName: party } : { creditorName: party }),
      remittanceInformationUnstructured: incoming ? `Invoice payment ${party}` : `Payment to ${party}`,
    });
  }
  return out;
}

/** Cents of all transactions of an account from `from` to `to` inclusive. */
function sumCents(bankId: string, account: Account, from: string, to: string): number {
  let cents = 0;
  for (let d = from; d <= to; d = addDays(d, 1)) {
    for (const t of transactionsOn(bankId, account, d)) cents += Math.round(Number(t.transactionAmount.amount) * 100);
  }
  return cents;
}

/** The bank's days with pending transactions: today and yesterday are not booked yet. */
export const PENDING_DAYS = 2;
/** Account history the bank keeps (days); opening balances are as of its first day. */
export const HISTORY_DAYS = 400;

const money = (a: Account, cents: number) => ({ currency: a.currency, amount: (cents / 100).toFixed(2) });

/** An account's balances on `now`: closing booked (up to the pending days), expected and available. */
export function balancesOn(bankId: string, a: Account, now: string) {
  const first = addDays(now, -HISTORY_DAYS);
  const bookedUntil = addDays(now, -PENDING_DAYS);
  const openingCents = Math.round(a.opening * 100);
  const booked = openingCents + sumCents(bankId, a, first, bookedUntil);
  const expected = booked + sumCents(bankId, a, addDays(bookedUntil, 1), now);
  return [
    { balanceAmount: money(a, booked), balanceType: 'closingBooked', referenceDate: bookedUntil },
    { balanceAmount: money(a, expected), balanceType: 'expected', lastChangeDateTime: `${now}T00:00:00Z` },
    { balanceAmount: money(a, expected), balanceType: 'interimAvailable', referenceDate: now },
  ];
}

/** An account's transactions from `from` to `to`, newest first as banks list them; pending ones have no booking date. */
export function transactionsBetween(bankId: string, a: Account, from: string, to: string, now: string) {
  const bookedUntil = addDays(now, -PENDING_DAYS);
  const booked: BankTransaction[] = [];
  const pending: BankTransaction[] = [];
  for (let d = to; d >= from; d = addDays(d, -1)) {
    for (const t of transactionsOn(bankId, a, d)) {
      if (d <= bookedUntil) booked.push(t);
      else {
        const { bookingDate: _b, ...rest } = t;
        pending.push(rest);
      }
    }
  }
  return { booked, pending };
}
