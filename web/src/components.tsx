/** Small shared pieces: the problem message, loading and empty states, the data hook. */
import { useCallback, useEffect, useState, type ReactNode } from 'react';
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
