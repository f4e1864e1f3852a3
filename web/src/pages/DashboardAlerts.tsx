/**
 * The dashboard's alerts, with the oldest overdue invoices and unreconciled bank lines behind them.
 * An alert's sentence is written here from its figures, with the portal's money format (format.ts);
 * the API's `message` (plain figures, for scripts) is shown only for a kind the portal does not know.
 */
import type { paths } from '../api/schema';
import { numeric, Table } from '../components';
import { formatAmount, plural } from '../format';

type Alerts =
  paths['/api/portal/workspaces/{slug}/dashboard/alerts']['get']['responses']['200']['content']['application/json'];

export function AlertList({ alerts }: { alerts: Alerts }) {
  const money = (n: number) => formatAmount(n, alerts.currency);
  return (
    <>
      <ul className="alerts">
        {alerts.alerts.map((a) => (
          <li key={a.kind} className={`alert ${a.severity}`}>
            <strong>{a.severity}</strong> {sentenceOf(a, alerts, money)}{' '}
            <a href={`#${a.kind === 'overdue_invoices' ? 'overdue' : 'unreconciled'}`}>details</a>
          </li>
        ))}
      </ul>
      {alerts.overdueInvoices.oldest.length > 0 && (
        <OverdueInvoices invoices={alerts.overdueInvoices.oldest} money={money} />
      )}
      {alerts.unreconciledBankLines.oldest.length > 0 && (
        <UnreconciledLines lines={alerts.unreconciledBankLines.oldest} money={money} />
      )}
    </>
  );
}

/** "7 customer invoices are overdue (€33,184.38); the oldest by 121 days" */
function sentenceOf(alert: Alerts['alerts'][number], alerts: Alerts, money: (n: number) => string): string {
  const overdue = alerts.overdueInvoices;
  const oldest = overdue.oldest[0];
  if (alert.kind === 'overdue_invoices' && oldest)
    return `${plural(overdue.count, 'customer invoice')} ${overdue.count === 1 ? 'is' : 'are'} overdue (${money(overdue.total)}); the oldest by ${plural(oldest.daysOverdue, 'day')}`;
  return alert.message;
}

function OverdueInvoices({
  invoices,
  money,
}: {
  invoices: Alerts['overdueInvoices']['oldest'];
  money: (n: number) => string;
}) {
  return (
    <Table
      columns={['Invoice', 'Customer', 'Due', 'Days overdue', numeric('Amount due')]}
      caption="Oldest overdue invoices"
      id="overdue"
    >
      {invoices.map((i) => (
        <tr key={i.id}>
          <td>{i.number}</td>
          <td>{i.customer ?? '—'}</td>
          <td>{i.dueDate}</td>
          <td>{i.daysOverdue}</td>
          <td className="num">{money(i.amountDue)}</td>
        </tr>
      ))}
    </Table>
  );
}

function UnreconciledLines({
  lines,
  money,
}: {
  lines: Alerts['unreconciledBankLines']['oldest'];
  money: (n: number) => string;
}) {
  return (
    <Table
      columns={['Date', 'Label', 'Journal', numeric('Amount')]}
      caption="Oldest unreconciled bank lines"
      id="unreconciled"
    >
      {lines.map((l) => (
        <tr key={l.id}>
          <td>{l.date}</td>
          <td>{l.label ?? '—'}</td>
          <td>{l.journal ?? '—'}</td>
          <td className="num">{money(l.amount)}</td>
        </tr>
      ))}
    </Table>
  );
}
