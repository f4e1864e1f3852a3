/** The portal's shared hooks: loading data, running one write at a time, looking again now and then. */
import { useCallback, useEffect, useState } from 'react';

/** What `useLoad` tells while it loads: the data once there, or the error. */
export interface Loadable<T> {
  data?: T;
  error?: unknown;
  loading: boolean;
}

/** Loads once (and again on `reload()` or when a dependency changes): data, error, loading. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<Loadable<T>>({ loading: true });
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

export type Action = ReturnType<typeof useAction>;

/** Calls `look` every `ms` while the page is visible (what happens in the background shows up); again from scratch when a dependency changes. */
export function usePolling(look: () => void, ms: number, deps: unknown[]) {
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') look();
    }, ms);
    return () => clearInterval(timer);
  }, deps);
}
