/** The dashboard's alerts, with the oldest overdue invoices and unreconciled bank lines behind them. */
import type { paths } from '../api/schema';
import { numeric, Table } from '../components';
import { formatAmount } from '../format';

type Alerts =
  paths['/api/portal/workspaces/{slug}/dashboard/alerts']['get']['responses']['200']['content']['application/json'];

export function AlertList({ alerts }: { alerts: Alerts }) {
  const money = (n: number) => formatAmount(n, alerts.currency);
  return (
    <>
      <ul className="alerts">
        {alerts.alerts.map((a) => (
          <li key={a.kind} className={`alert ${a.severity}`}>
            <strong>{a.severity}</strong> {a.message}{' '}
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
