/** Small shared pieces: the problem message, loading and empty states, the data hook, the dialog. */
import { useCallback, useEffect, useLayoutEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError } from './api/client';

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

/** Loads once (and again on `reload()` or when a dependency changes): data, error, loading. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const run = useCallback(load, deps);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    run().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [run, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

export const formatDate = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** An amount in the currency's smallest unit (cents), e.g. 4900 eur → €49.00. */
export const formatMoney = (cents: number, currency: string) =>
  new Intl.NumberFormat(undefined, { style: 'currency', currency: currency.toUpperCase() }).format(cents / 100);

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

/** One write at a time: `run` calls it, `busy` while it runs, `error` when it failed (shown by ErrorMessage). */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  async function run<T>(action: () => Promise<T>): Promise<T | undefined> {
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, setError, run };
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
  const headers = [...(table.tHead?.rows[0]?.cells ?? [])].flatMap((th) => Array<string>(th.colSpan).fill(th.querySelector('.sr-only') ? '' : (th.textContent ?? '').trim()));
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
