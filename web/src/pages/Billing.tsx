/**
 * The plan and its invoices, as the payment provider last reported them: tier, status, seats,
 * period and next invoice for every member; the invoices (amounts, status, hosted page and PDF)
 * for admins.
 */
import { type ReactNode } from 'react';
import { api, ApiError, call } from '../api/client';
import type { paths } from '../api/schema';
import { Loaded, numeric, Table } from '../components';
import { formatDate, formatMoney } from '../format';
import { useLoad } from '../hooks';
import type { WorkspaceRef } from '../nav';

type Subscription = paths['/api/portal/subscription']['get']['responses']['200']['content']['application/json'];
type Invoice =
  paths['/api/billing/invoices']['get']['responses']['200']['content']['application/json']['items'][number];

const STATUS_TEXT: Record<string, string> = {
  trialing: 'Trial',
  active: 'Active',
  past_due: 'Payment overdue',
  unpaid: 'Unpaid',
  canceled: 'Cancelled',
  incomplete: 'Incomplete',
  incomplete_expired: 'Expired',
  paused: 'Paused',
};

/** The subscription (null: none yet) and, for admins, its invoices (null for a member). */
function useBilling(workspace: WorkspaceRef) {
  const subscription = useLoad(
    () =>
      call(() => api.GET('/api/portal/subscription', { params: { query: { workspace: workspace.slug } } })).catch(
        (err: unknown) => {
          if (err instanceof ApiError && err.status === 404) return null; // no subscription yet
          throw err;
        },
      ),
    [workspace.slug],
  );
  const invoices = useLoad(
    () =>
      workspace.role === 'admin'
        ? call(() => api.GET('/api/billing/invoices', { params: { query: { workspace: workspace.slug, limit: 50 } } }))
        : Promise.resolve(null),
    [workspace.slug, workspace.role],
  );
  return { subscription, invoices };
}

export function Billing({ workspace }: { workspace: WorkspaceRef }) {
  const { subscription, invoices } = useBilling(workspace);
  return (
    <>
      <h1>Subscription</h1>
      <Loaded state={subscription} what="the subscription" empty="This workspace has no subscription yet.">
        {(s) => <SubscriptionFacts subscription={s} />}
      </Loaded>
      {workspace.role === 'admin' && (
        <section aria-labelledby="invoices-title">
          <h2 id="invoices-title">Invoices</h2>
          <Loaded state={invoices} what="invoices" empty="No invoices yet." isEmpty={(d) => !d || d.items.length === 0}>
            {(d) => <InvoiceTable invoices={d.items} />}
          </Loaded>
        </section>
      )}
    </>
  );
}

function SubscriptionFacts({ subscription: s }: { subscription: Subscription }) {
  return (
    <dl className="facts card">
      <Fact term="Plan">
        <dd className="capitalize">{s.tier}</dd>
      </Fact>
      <Fact term="Status">
        <dd>
          <span className={`badge ${s.status === 'active' || s.status === 'trialing' ? 'ok' : 'bad'}`}>
            {STATUS_TEXT[s.status] ?? s.status}
          </span>
          {s.cancelAtPeriodEnd && <span className="muted small"> ends with the current period</span>}
        </dd>
      </Fact>
      <Fact term="Seats">
        <dd>{s.seats}</dd>
      </Fact>
      <Fact term="Current period">
        <dd>{s.currentPeriod ? `${formatDate(s.currentPeriod.start)} – ${formatDate(s.currentPeriod.end)}` : '—'}</dd>
      </Fact>
      <Fact term="Next invoice">
        <dd>
          {s.nextInvoice
            ? `${formatMoney(s.nextInvoice.amountDue, s.nextInvoice.currency)} on ${formatDate(s.nextInvoice.date)}`
            : 'none scheduled'}
        </dd>
      </Fact>
      {s.pastDueSince && (
        <Fact term="Payment overdue since">
          <dd className="error-text">{formatDate(s.pastDueSince)}</dd>
        </Fact>
      )}
      {s.suspendedAt && (
        <Fact term="Suspended">
          <dd className="error-text">
            since {formatDate(s.suspendedAt)}: the workspace’s API keys are refused until the invoice is paid
          </dd>
        </Fact>
      )}
    </dl>
  );
}

/** One term of a <dl> and its <dd> (given as children). */
const Fact = ({ term, children }: { term: string; children: ReactNode }) => (
  <div>
    <dt>{term}</dt>
    {children}
  </div>
);

const day = (iso: string) => new Date(iso).toLocaleDateString();
const periodOf = (p: Invoice['period']) => (p.start ? `${day(p.start)} – ${p.end ? day(p.end) : ''}` : '—');

function InvoiceTable({ invoices }: { invoices: Invoice[] }) {
  return (
    <Table columns={['Number', 'Date', 'Period', 'Status', numeric('Amount'), numeric('Remaining'), 'Documents']}>
      {invoices.map((inv) => (
        <tr key={inv.id} data-invoice-id={inv.id}>
          <td>{inv.number ?? inv.id}</td>
          <td>{formatDate(inv.createdAt)}</td>
          <td>{periodOf(inv.period)}</td>
          <td>
            <span className={`badge ${inv.status === 'paid' ? 'ok' : inv.status === 'open' ? 'warn' : ''}`}>
              {inv.status}
            </span>
          </td>
          <td className="num">{formatMoney(inv.amountDue, inv.currency)}</td>
          <td className="num">{formatMoney(inv.amountRemaining, inv.currency)}</td>
          <td>
            <InvoiceLinks invoice={inv} />
          </td>
        </tr>
      ))}
    </Table>
  );
}

/** The provider's hosted page (Pay while open, else View) and the PDF, each in a new tab. */
function InvoiceLinks({ invoice: inv }: { invoice: Invoice }) {
  const name = inv.number ?? inv.id;
  return (
    <div className="row-actions">
      {inv.hostedInvoiceUrl && (
        <a href={inv.hostedInvoiceUrl} target="_blank" rel="noopener noreferrer">
          {inv.status === 'open' ? 'Pay' : 'View'}
          <span className="sr-only"> invoice {name}</span>
        </a>
      )}
      {inv.invoicePdf && (
        <a href={inv.invoicePdf} target="_blank" rel="noopener noreferrer">
          PDF<span className="sr-only"> of invoice {name}</span>
        </a>
      )}
    </div>
  );
}
