/** An endpoint's messages, each with its delivery attempts (time, status, duration, response excerpt) and a Replay button. */
import { ErrorMessage, Loaded, TableWrap } from '../../components';
import { formatDate, plural } from '../../format';
import type { Attempt } from './endpoints';
import { type Attempts, byMessage, type Message } from './useAttempts';

/** The messages and their attempts, older ones on request; Replay only while nothing else runs (`busy`) and the endpoint is enabled. */
export function MessagesSection({
  attempts,
  enabled,
  busy,
  onReplay,
}: {
  attempts: Attempts;
  enabled: boolean;
  busy: boolean;
  onReplay: (messageId: string) => unknown;
}) {
  const messages = byMessage(attempts.all);
  const { older } = attempts;
  return (
    <section aria-labelledby="messages-title">
      <h2 id="messages-title">Messages and attempts</h2>
      {!enabled && <p className="muted">The endpoint is disabled: enable it to replay messages.</p>}
      <Loaded
        state={attempts.newest}
        what="attempts"
        empty="Nothing was sent to this endpoint yet. Send a test event to try it."
        isEmpty={() => messages.length === 0}
      >
        {() => <MessageList messages={messages} canReplay={!busy && enabled} onReplay={onReplay} />}
      </Loaded>
      {messages.length > 0 && (
        <div className="toolbar">
          <span className="muted small">
            {plural(attempts.all.length, 'attempt')} shown{older.more === false ? '; there are no older ones' : ''}.
          </span>
          {attempts.hasOlder && (
            <button type="button" className="secondary" onClick={() => void attempts.loadOlder()} disabled={older.busy}>
              {older.busy ? 'Loading…' : 'Load older attempts'}
            </button>
          )}
        </div>
      )}
      <ErrorMessage error={older.error} />
    </section>
  );
}

function MessageList({
  messages,
  canReplay,
  onReplay,
}: {
  messages: Message[];
  canReplay: boolean;
  onReplay: (messageId: string) => unknown;
}) {
  return (
    <TableWrap>
      <table className="table attempts">
        <thead>
          <tr>
            <th>Time</th>
            <th>Trigger</th>
            <th className="num">Status</th>
            <th className="num">Duration</th>
            <th>Response</th>
          </tr>
        </thead>
        {messages.map((m) => (
          <tbody key={m.messageId} data-message-id={m.messageId}>
            <tr className="message">
              <th colSpan={4} scope="rowgroup">
                <span className="event-type">{m.eventType ?? 'event type unknown'}</span>{' '}
                <span className="muted small">message</span> <code>{m.messageId}</code>
              </th>
              <td>
                {m.messageId.startsWith('msg_test_') ? (
                  <span className="muted small">test event</span>
                ) : (
                  <button
                    type="button"
                    className="secondary"
                    onClick={() => void onReplay(m.messageId)}
                    disabled={!canReplay}
                    aria-label={`Replay ${m.messageId}`}
                  >
                    Replay
                  </button>
                )}
              </td>
            </tr>
            {m.attempts.map((a) => (
              <AttemptRow key={a.id} attempt={a} />
            ))}
          </tbody>
        ))}
      </table>
    </TableWrap>
  );
}

function AttemptRow({ attempt: a }: { attempt: Attempt }) {
  return (
    <tr className="attempt" data-outcome={a.outcome}>
      <td>{formatDate(a.attemptedAt)}</td>
      <td>{a.trigger}</td>
      <td className={`num status s${String(a.statusCode ?? 5)[0]}`}>{a.statusCode ?? a.outcome}</td>
      <td className="num">{a.durationMs} ms</td>
      <td className="wrap excerpt">
        {a.error && <div className="error-text">{a.error}</div>}
        {a.responseExcerpt ? <code>{a.responseExcerpt.slice(0, 300)}</code> : <span className="muted">(empty)</span>}
      </td>
    </tr>
  );
}
