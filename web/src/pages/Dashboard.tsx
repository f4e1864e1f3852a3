/** KPIs, the cash-flow chart (Chart.js) and the alerts of the workspace's ERP, as a member sees them. */
import { useEffect, useRef } from 'react';
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip } from 'chart.js';
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorMessage, Loading, TableWrap, useLoad } from '../components';
import type { WorkspaceRef } from '../nav';

Chart.register(BarController, BarElement, LineController, LineElement, PointElement, CategoryScale, LinearScale, Legend, Tooltip);

type Cashflow = paths['/api/portal/workspaces/{slug}/dashboard/cashflow']['get']['responses']['200']['content']['application/json'];

export function Dashboard({ workspace }: { workspace: WorkspaceRef }) {
  const path = { path: { slug: workspace.slug } };
  const kpis = useLoad(() => call(() => api.GET('/api/portal/workspaces/{slug}/dashboard/kpis', { params: path })), [workspace.slug]);
  // the API's default period (6 months, README "Dashboards"): the dashboard and a key's `GET …/cashflow` show the same months
  const cashflow = useLoad(() => call(() => api.GET('/api/portal/workspaces/{slug}/dashboard/cashflow', { params: path })), [workspace.slug]);
  const alerts = useLoad(() => call(() => api.GET('/api/portal/workspaces/{slug}/dashboard/alerts', { params: path })), [workspace.slug]);
  const k = kpis.data;
  const money = (n: number, currency = k?.currency ?? cashflow.data?.currency ?? 'EUR') =>
    new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(n);

  return (
    <>
      <h1>Dashboard</h1>
      <p className="muted">
        {workspace.name}
        {k && ` · figures of ${k.companies[0]?.name ?? 'the main company'} in ${k.currency} as of ${k.asOf} · ERP ${k.erpVersion}`}
      </p>
      <section aria-labelledby="kpis">
        <h2 id="kpis" className="sr-only">
          Key figures
        </h2>
        {kpis.loading && !k ? (
          <Loading what="key figures" />
        ) : kpis.error ? (
          <ErrorMessage error={kpis.error} />
        ) : k ? (
          <div className="kpis">
            <Kpi label="Revenue this month" value={money(k.revenue)} />
            <Kpi label="Receivables" value={money(k.receivables)} note={`${money(k.overdueReceivables)} overdue (${k.overdueInvoiceCount} invoices)`} />
            <Kpi label="Payables" value={money(k.payables)} note={`${money(k.overduePayables)} overdue`} />
            <Kpi label="Cash balance" value={money(k.cashBalance)} note={k.cashJournals.map((j) => `${j.name}: ${money(j.balance)}`).join(' · ')} />
          </div>
        ) : null}
      </section>
      {k && k.companies.length > 1 && (
        <section aria-labelledby="companies" className="card">
          <h2 id="companies">Per company</h2>
          <p className="muted small">Each company in its own currency: amounts in different currencies are never added up.</p>
          <TableWrap>
            <table className="table" id="company-figures">
              <thead>
                <tr>
                  <th>Company</th>
                  <th>Currency</th>
                  <th className="num">Revenue (month)</th>
                  <th className="num">Receivables</th>
                  <th className="num">Payables</th>
                  <th className="num">Cash balance</th>
                </tr>
              </thead>
              <tbody>
                {k.companies.map((c, i) => (
                  <tr key={c.id}>
                    <td>
                      {c.name}
                      {i === 0 && <span className="muted small"> (main)</span>}
                    </td>
                    <td>{c.currency}</td>
                    <td className="num">{money(c.revenue, c.currency)}</td>
                    <td className="num">{money(c.receivables, c.currency)}</td>
                    <td className="num">{money(c.payables, c.currency)}</td>
                    <td className="num">{money(c.cashBalance, c.currency)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        </section>
      )}
      <section aria-labelledby="cashflow" className="card">
        <h2 id="cashflow">Cash flow{cashflow.data ? `, last ${cashflow.data.months.length} months` : ''}</h2>
        {cashflow.loading && !cashflow.data ? (
          <Loading what="cash flow" />
        ) : cashflow.error ? (
          <ErrorMessage error={cashflow.error} />
        ) : cashflow.data ? (
          <CashflowChart data={cashflow.data} />
        ) : null}
      </section>
      <section aria-labelledby="alerts" className="card">
        <h2 id="alerts">Alerts</h2>
        {alerts.loading && !alerts.data ? (
          <Loading what="alerts" />
        ) : alerts.error ? (
          <ErrorMessage error={alerts.error} />
        ) : alerts.data && alerts.data.alerts.length === 0 ? (
          <p className="empty">Nothing needs attention.</p>
        ) : alerts.data ? (
          <>
            <ul className="alerts">
              {alerts.data.alerts.map((a) => (
                <li key={a.kind} className={`alert ${a.severity}`}>
                  <strong>{a.severity}</strong> {a.message} <a href={`#${a.kind === 'overdue_invoices' ? 'overdue' : 'unreconciled'}`}>details</a>
                </li>
              ))}
            </ul>
            {alerts.data.overdueInvoices.oldest.length > 0 && (
              <TableWrap>
              <table id="overdue" className="table">
                <caption>Oldest overdue invoices</caption>
                <thead>
                  <tr>
                    <th>Invoice</th>
                    <th>Customer</th>
                    <th>Due</th>
                    <th>Days overdue</th>
                    <th className="num">Amount due</th>
                  </tr>
                </thead>
                <tbody>
                  {alerts.data.overdueInvoices.oldest.map((i) => (
                    <tr key={i.id}>
                      <td>{i.number}</td>
                      <td>{i.customer ?? '—'}</td>
                      <td>{i.dueDate}</td>
                      <td>{i.daysOverdue}</td>
                      <td className="num">{money(i.amountDue, alerts.data!.currency)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              </TableWrap>
            )}
            {alerts.data.unreconciledBankLines.oldest.length > 0 && (
              <TableWrap>
              <table id="unreconciled" className="table">
                <caption>Oldest unreconciled bank lines</caption>
                <thead>
                  <tr>
                    <th>Date</th>
                    <th>Label</th>
                    <th>Journal</th>
                    <th className="num">Amount</th>
                  </tr>
                </thead>
                <tbody>
                  {alerts.data.unreconciledBankLines.oldest.map((l) => (
                    <tr key={l.id}>
                      <td>{l.date}</td>
                      <td>{l.label ?? '—'}</td>
                      <td>{l.journal ?? '—'}</td>
                      <td className="num">{money(l.amount, alerts.data!.currency)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              </TableWrap>
            )}
          </>
        ) : null}
      </section>
    </>
  );
}

function Kpi({ label, value, note }: { label: string; value: string; note?: string }) {
  return (
    <div className="kpi card">
      <div className="muted">{label}</div>
      <div className="kpi-value">{value}</div>
      {note && <div className="muted small">{note}</div>}
    </div>
  );
}

function CashflowChart({ data }: { data: Cashflow }) {
  const money = (n: number) => new Intl.NumberFormat(undefined, { style: 'currency', currency: data.currency }).format(n);
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const chart = new Chart(canvas.current!, {
      type: 'bar',
      data: {
        labels: data.months.map((m) => m.month),
        datasets: [
          { type: 'bar', label: 'In', data: data.months.map((m) => m.inflow), backgroundColor: '#2da44e' },
          { type: 'bar', label: 'Out', data: data.months.map((m) => -m.outflow), backgroundColor: '#cf222e' },
          { type: 'line', label: 'Net', data: data.months.map((m) => m.net), borderColor: '#0969da', backgroundColor: '#0969da' },
        ],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: { x: { stacked: true }, y: { stacked: false, title: { display: true, text: data.currency } } },
      },
    });
    return () => chart.destroy();
  }, [data]);
  const t = data.totals;
  return (
    <>
      <div className="chart">
        <canvas ref={canvas} role="img" aria-label={`Cash flow per month in ${data.currency}: in ${t.inflow}, out ${t.outflow}, net ${t.net} in total`} data-months={data.months.length} data-net={t.net} />
      </div>
      <p className="muted small">
        Total over {data.months.length} months: in {money(t.inflow)} · out {money(t.outflow)} · net {money(t.net)}
      </p>
    </>
  );
}
