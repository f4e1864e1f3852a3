/** KPIs, the cash-flow chart (Chart.js) and the alerts of the workspace's ERP, as a member sees them. */
import { api, call } from '../api/client';
import type { paths } from '../api/schema';
import { ErrorMessage, Loaded, numeric, Table } from '../components';
import { formatAmount } from '../format';
import { useAction, useLoad } from '../hooks';
import type { WorkspaceRef } from '../nav';
import { CashflowChart } from './CashflowChart';
import { AlertList } from './DashboardAlerts';

type Kpis =
  paths['/api/portal/workspaces/{slug}/dashboard/kpis']['get']['responses']['200']['content']['application/json'];

/** The dashboard's three loads: key figures, cash flow, alerts. */
function useDashboard(workspace: WorkspaceRef) {
  const path = { path: { slug: workspace.slug } };
  const kpis = useLoad(
    () => call(() => api.GET('/api/portal/workspaces/{slug}/dashboard/kpis', { params: path })),
    [workspace.slug],
  );
  // the API's default period (6 months, docs/workspace-admins.md "Dashboard"): the dashboard and a key's `GET …/cashflow` show the same months
  const cashflow = useLoad(
    () => call(() => api.GET('/api/portal/workspaces/{slug}/dashboard/cashflow', { params: path })),
    [workspace.slug],
  );
  const alerts = useLoad(
    () => call(() => api.GET('/api/portal/workspaces/{slug}/dashboard/alerts', { params: path })),
    [workspace.slug],
  );
  return { kpis, cashflow, alerts };
}

export function Dashboard({ workspace }: { workspace: WorkspaceRef }) {
  const { kpis, cashflow, alerts } = useDashboard(workspace);
  const k = kpis.data;
  const money = (n: number, currency = k?.currency ?? cashflow.data?.currency ?? 'EUR') => formatAmount(n, currency);

  return (
    <>
      <h1>Dashboard</h1>
      <OpenErp workspace={workspace} />
      <p className="muted">
        {workspace.name}
        {k &&
          ` · figures of ${k.companies[0]?.name ?? 'the main company'} in ${k.currency} as of ${k.asOf} · ERP ${k.erpVersion}`}
      </p>
      <section aria-labelledby="kpis">
        <h2 id="kpis" className="sr-only">
          Key figures
        </h2>
        <Loaded state={kpis} what="key figures">
          {(figures) => <KpiCards kpis={figures} money={money} />}
        </Loaded>
      </section>
      {k && k.companies.length > 1 && <CompanyFigures companies={k.companies} />}
      <section aria-labelledby="cashflow" className="card">
        <h2 id="cashflow">Cash flow{cashflow.data ? `, last ${cashflow.data.months.length} months` : ''}</h2>
        <Loaded state={cashflow} what="cash flow">
          {(data) => <CashflowChart data={data} />}
        </Loaded>
      </section>
      <section aria-labelledby="alerts" className="card">
        <h2 id="alerts">Alerts</h2>
        <Loaded state={alerts} what="alerts" empty="Nothing needs attention." isEmpty={(d) => d.alerts.length === 0}>
          {(d) => <AlertList alerts={d} />}
        </Loaded>
      </section>
    </>
  );
}

/** "Open ERP": the ERP signs the person in through the platform's provider, no second password. */
function OpenErp({ workspace }: { workspace: WorkspaceRef }) {
  const action = useAction();
  async function open() {
    const link = await action.run(() =>
      call(() => api.POST('/api/portal/erp/sign-in', { params: { query: { workspace: workspace.slug } } })),
    );
    if (link) window.location.assign(link.url);
  }
  return (
    <p>
      <button type="button" onClick={() => void open()} disabled={action.busy}>
        Open ERP
      </button>
      {action.error !== undefined && <ErrorMessage error={action.error} />}
    </p>
  );
}

function KpiCards({ kpis: k, money }: { kpis: Kpis; money: (n: number) => string }) {
  return (
    <div className="kpis">
      <Kpi label="Revenue this month" value={money(k.revenue)} />
      <Kpi
        label="Receivables"
        value={money(k.receivables)}
        note={`${money(k.overdueReceivables)} overdue (${k.overdueInvoiceCount} invoices)`}
      />
      <Kpi label="Payables" value={money(k.payables)} note={`${money(k.overduePayables)} overdue`} />
      <Kpi
        label="Cash balance"
        value={money(k.cashBalance)}
        note={k.cashJournals.map((j) => `${j.name}: ${money(j.balance)}`).join(' · ')}
      />
    </div>
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

/** Each company's figures in its own currency (shown when the ERP has more than one). */
function CompanyFigures({ companies }: { companies: Kpis['companies'] }) {
  return (
    <section aria-labelledby="companies" className="card">
      <h2 id="companies">Per company</h2>
      <p className="muted small">
        Each company in its own currency: amounts in different currencies are never added up.
      </p>
      <Table
        columns={[
          'Company',
          'Currency',
          numeric('Revenue (month)'),
          numeric('Receivables'),
          numeric('Payables'),
          numeric('Cash balance'),
        ]}
        id="company-figures"
      >
        {companies.map((c, i) => (
          <tr key={c.id}>
            <td>
              {c.name}
              {i === 0 && <span className="muted small"> (main)</span>}
            </td>
            <td>{c.currency}</td>
            <td className="num">{formatAmount(c.revenue, c.currency)}</td>
            <td className="num">{formatAmount(c.receivables, c.currency)}</td>
            <td className="num">{formatAmount(c.payables, c.currency)}</td>
            <td className="num">{formatAmount(c.cashBalance, c.currency)}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
