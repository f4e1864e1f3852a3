/**
 * Small shared pieces: the problem message, loading and empty states, notices, dialogs (a form's
 * buttons, a confirmation, a secret shown once), a secret to copy, tables and their box.
 */
import { useLayoutEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError } from './api/client';
import { useAction, type Loadable } from './hooks';

export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  const text = error instanceof Error && error.message ? error.message : 'Something went wrong.';
  const code = error instanceof ApiError && error.problem.requestId ? ` (request ${error.problem.requestId})` : '';
  return (
    <div className="error" role="alert">
      {text}
      {code && <span className="muted">{code}</span>}
    </div>
  );
}

export const Loading = ({ what }: { what: string }) => (
  <p className="muted" role="status" aria-live="polite">
    Loading {what}…
  </p>
);

export const Empty = ({ children }: { children: ReactNode }) => <p className="empty">{children}</p>;

/** What a write did, said politely (nothing when there is nothing to say). */
export const Notice = ({ children }: { children: ReactNode }) =>
  children ? (
    <p className="notice" role="status">
      {children}
    </p>
  ) : null;

/**
 * What `useLoad` has so far: "Loading …" until the first answer, the problem if it failed,
 * `empty` (the Empty sentence) when `isEmpty` says so (by default: the answer is null), else the data.
 */
export function Loaded<T>({
  state,
  what,
  empty,
  isEmpty = (data) => data === null,
  children,
}: {
  state: Loadable<T>;
  what: string;
  empty?: ReactNode;
  isEmpty?: (data: T) => boolean;
  children: (data: NonNullable<T>) => ReactNode;
}) {
  if (state.loading && state.data === undefined) return <Loading what={what} />;
  if (state.error) return <ErrorMessage error={state.error} />;
  if (state.data === undefined) return null;
  if (empty !== undefined && isEmpty(state.data)) return <Empty>{empty}</Empty>;
  if (state.data === null) return null;
  return <>{children(state.data)}</>;
}

/** A modal <dialog>: focus stays inside, Escape closes it. */
export function Dialog({ title, onClose, children }: { title: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  return (
    <dialog
      ref={(el) => {
        ref.current = el;
        if (el && !el.open) el.showModal();
      }}
      aria-labelledby="dialog-title"
      onClose={onClose}
      onCancel={onClose}
    >
      <h2 id="dialog-title">{title}</h2>
      {children}
    </dialog>
  );
}

/** The foot of a dialog's form: its problem, Cancel, and the submit button (its `busyText` while it runs). */
export function FormActions({
  error,
  busy,
  onCancel,
  submit,
  busyText,
}: {
  error: unknown;
  busy: boolean;
  onCancel: () => void;
  submit: string;
  busyText: string;
}) {
  return (
    <>
      <ErrorMessage error={error} />
      <div className="actions">
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" disabled={busy}>
          {busy ? busyText : submit}
        </button>
      </div>
    </>
  );
}

/** "Are you sure?" before a write that cannot be undone: Cancel has the focus; `onConfirm` runs the write (its problem is shown here). */
export function ConfirmDialog({
  title,
  confirm,
  busyText,
  onConfirm,
  onCancel,
  children,
}: {
  title: string;
  confirm: string;
  busyText: string;
  onConfirm: () => Promise<unknown>;
  onCancel: () => void;
  children: ReactNode;
}) {
  const action = useAction();
  return (
    <Dialog title={title} onClose={onCancel}>
      {children}
      <ErrorMessage error={action.error} />
      <div className="actions">
        <button type="button" className="secondary" onClick={onCancel} autoFocus>
          Cancel
        </button>
        <button type="button" className="danger" disabled={action.busy} onClick={() => void action.run(onConfirm)}>
          {action.busy ? busyText : confirm}
        </button>
      </div>
    </Dialog>
  );
}

/** A secret (a token, a signing secret) in a read-only field that selects itself, with a Copy button. */
export function SecretField({ secret, label }: { secret: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div className="token-row">
      <input className="token" readOnly value={secret} aria-label={label} onFocus={(e) => e.currentTarget.select()} />
      <button
        type="button"
        onClick={() =>
          void navigator.clipboard?.writeText(secret).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

/** A secret just made (a key's token, an endpoint's signing secret), shown in a dialog with what to do with it (`children`), and Done. */
export function SecretOnceDialog({
  title,
  secret,
  label,
  onClose,
  children,
}: {
  title: string;
  secret: string;
  label: string;
  onClose: () => void;
  children: ReactNode;
}) {
  return (
    <Dialog title={title} onClose={onClose}>
      {children}
      <SecretField secret={secret} label={label} />
      <div className="actions">
        <button type="button" onClick={onClose}>
          Done
        </button>
      </div>
    </Dialog>
  );
}

/** A table's column: its header, or how it shows (`num`: figures, right-aligned; `srOnly`: a header only screen readers see). */
export type Column = string | { label: string; num?: boolean; srOnly?: boolean };

/** The last column of a table whose rows have buttons. */
export const ACTIONS: Column = { label: 'Actions', srOnly: true };

/** A column of figures (right-aligned). */
export const numeric = (label: string): Column => ({ label, num: true });

/** A table in its box (TableWrap): its caption, the header row of `columns`, and `children` as the rows of its body. */
export function Table({
  columns,
  caption,
  id,
  className = 'table',
  children,
}: {
  columns: Column[];
  caption?: string;
  id?: string;
  className?: string;
  children: ReactNode;
}) {
  return (
    <TableWrap>
      <table className={className} id={id}>
        {caption && <caption>{caption}</caption>}
        <thead>
          <tr>
            {columns
              .map((c) => (typeof c === 'string' ? { label: c } : c))
              .map((c) => (
                <th key={c.label} className={c.num ? 'num' : undefined}>
                  {c.srOnly ? <span className="sr-only">{c.label}</span> : c.label}
                </th>
              ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </TableWrap>
  );
}

/**
 * The box of a table. Wide, it scrolls sideways inside the box; narrow (styles.css), each row
 * stacks as "label value" lines, the labels being the column headers: every cell of a body row
 * gets its column's header as `data-label` (empty for a header only screen readers see).
 */
export function TableWrap({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    for (const table of ref.current?.querySelectorAll('table') ?? []) labelCells(table);
  });
  return (
    <div className="table-wrap" ref={ref}>
      {children}
    </div>
  );
}

function labelCells(table: HTMLTableElement) {
  const headers = [...(table.tHead?.rows[0]?.cells ?? [])].flatMap((th) =>
    Array<string>(th.colSpan).fill(th.querySelector('.sr-only') ? '' : (th.textContent ?? '').trim()),
  );
  for (const body of table.tBodies) {
    for (const row of body.rows) {
      if (row.querySelector('th[scope="rowgroup"]')) continue;
      let column = 0;
      for (const cell of row.cells) {
        if (cell.tagName === 'TD' && cell.colSpan === 1) cell.dataset.label = headers[column] ?? '';
        column += cell.colSpan;
      }
    }
  }
}
