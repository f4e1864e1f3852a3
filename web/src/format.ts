/** How the portal writes dates and amounts, and reads the browser's date inputs. */

export const formatDate = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** An amount in the currency's main unit, e.g. 49 eur → €49.00. */
export const formatAmount = (amount: number, currency: string) =>
  new Intl.NumberFormat(undefined, { style: 'currency', currency: currency.toUpperCase() }).format(amount);

/** An amount in the currency's smallest unit (cents), e.g. 4900 eur → €49.00. */
export const formatMoney = (cents: number, currency: string) => formatAmount(cents / 100, currency);

/** datetime-local (the browser's local time) → ISO 8601 */
export const isoOf = (local: FormDataEntryValue | null) => (local ? new Date(String(local)).toISOString() : undefined);

/** "1 attempt", "2 attempts" */
export const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
