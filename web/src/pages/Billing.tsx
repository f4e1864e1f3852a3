/**
 * The plan and its invoices, as the payment provider last reported them: tier, status, seats,
 * period and next invoice for every member; the invoices (amounts, status, hosted page and PDF)
 * for admins.
 */
import { api, ApiError, call } from '../api/client';
import { Empty, ErrorMessage, Loading, TableWrap, formatDate, formatMoney, useLoad } from '../components';
import type { WorkspaceRef } from '../nav';

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

export function Billing({ workspace }: { workspace: WorkspaceRef }) {
  const query = { query: { workspace: workspace.slug } };
  const sub = useLoad(
    () =>
      call(() => api.GET('/api/portal/subscription', { params: query })).catch((err: unknown) => {
        if (err instanceof ApiError && err.status === 404) return null; // no subscription yet
        throw err;
      }),
    [workspace.slug],
  );
  const invoices = useLoad(
    () => (workspace.role === 'admin' ? call(() => api.GET('/api/billing/invoices', { params: { query: { workspace: workspace.slug, limit: 50 } } })) : Promise.resolve(null)),
    [workspace.slug, workspace.role],
  );
  const s = sub.data;

  return (
    <>
      <h1>Subscription</h1>
      {sub.loading && sub.data === undefined ? (
        <Loading what="the subscription" />
      ) : sub.error ? (
        <ErrorMessage error={sub.error} />
      ) : !s ? (
        <Empty>This workspace has no subscription yet.</Empty>
      ) : (
        <dl className="facts card">
          <div>
            <dt>Plan</dt>
            <dd className="capitalize">{s.tier}</dd>
          </div>
          <div>
            <dt>Status</dt>
            <dd>
              <span className={`badge ${s.status === 'active' || s.status === 'trialing' ? 'ok' : 'bad'}`}>{STATUS_TEXT[s.status] ?? s.status}</span>
              {s.cancelAtPeriodEnd && <span className="muted small"> ends with the current period</span>}
            </dd>
          </div>
          <div>
            <dt>Seats</dt>
            <dd>{s.seats}</dd>
          </div>
          <div>
            <dt>Current period</dt>
            <dd>{s.currentPeriod ? `${formatDate(s.currentPeriod.start)} – ${formatDate(s.currentPeriod.end)}` : '—'}</dd>
          </div>
          <div>
            <dt>Next invoice</dt>
            <dd>{s.nextInvoice ? `${formatMoney(s.nextInvoice.amountDue, s.nextInvoice.currency)} on ${formatDate(s.nextInvoice.date)}` : 'none scheduled'}</dd>
          </div>
          {s.pastDueSince && (
            <div>
              <dt>Payment overdue since</dt>
              <dd className="error-text">{formatDate(s.pastDueSince)}</dd>
            </div>
          )}
          {s.suspendedAt && (
            <div>
              <dt>Suspended</dt>
              <dd className="error-text">since {formatDate(s.suspendedAt)}: the workspace’s API keys are refused until the invoice is paid</dd>
            </div>
          )}
        </dl>
      )}

      {workspace.role === 'admin' && (
        <section aria-labelledby="invoices-title">
          <h2 id="invoices-title">Invoices</h2>
          {invoices.loading && invoices.data === undefined ? (
            <Loading what="invoices" />
          ) : invoices.error ? (
            <ErrorMessage error={invoices.error} />
          ) : !invoices.data || invoices.data.items.length === 0 ? (
            <Empty>No invoices yet.</Empty>
          ) : (
            <TableWrap>
              <table className="table">
                <thead>
                  <tr>
                    <th>Number</th>
                    <th>Date</th>
                    <th>Period</th>
                    <th>Status</th>
                    <th className="num">Amount</th>
                    <th className="num">Remaining</th>
                    <th>Documents</th>
                  </tr>
                </thead>
                <tbody>
                  {invoices.data.items.map((inv) => (
                    <tr key={inv.id} data-invoice-id={inv.id}>
                      <td>{inv.number ?? inv.id}</td>
                      <td>{formatDate(inv.createdAt)}</td>
                      <td>{inv.period.start ? `${new Date(inv.period.start).toLocaleDateString()} – ${inv.period.end ? new Date(inv.period.end).toLocaleDateString() : ''}` : '—'}</td>
                      <td>
                        <span className={`badge ${inv.status === 'paid' ? 'ok' : inv.status === 'open' ? 'warn' : ''}`}>{inv.status}</span>
                      </td>
                      <td className="num">{formatMoney(inv.amountDue, inv.currency)}</td>
                      <td className="num">{formatMoney(inv.amountRemaining, inv.currency)}</td>
                      <td>
                        <div className="row-actions">
                        {inv.hostedInvoiceUrl && (
                          <a href={inv.hostedInvoiceUrl} target="_blank" rel="noopener noreferrer">
                            {inv.status === 'open' ? 'Pay' : 'View'}
                            <span className="sr-only"> invoice {inv.number ?? inv.id}</span>
                          </a>
                        )}
                        {inv.invoicePdf && (
                          <a href={inv.invoicePdf} target="_blank" rel="noopener noreferrer">
                            PDF<span className="sr-only"> of invoice {inv.number ?? inv.id}</span>
                          </a>
                        )}
                      </div>
                    </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
        </section>
      )}
    </>
  );
}
