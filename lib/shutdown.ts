/**
 * How a process run on its own (`npm run start:*`, a container) stops on SIGINT/SIGTERM: the first
 * signal starts `close` once; later ones are ignored while it runs, so the usage flush and the
 * other last writes of a close are never cut short. A second signal is common: the tsx CLI relays
 * a terminal's Ctrl-C to its child when it does not see the child report it within 30 ms, so the
 * child often gets SIGINT twice, and with a `process.once` handler the second one ended the process
 * (exit 130) in the middle of its close. Exits 0 after `close`, 1 if it fails or outlasts `deadlineMs`.
 */
export function closeOnSignals(
  close: () => Promise<unknown>,
  opts: { deadlineMs?: number; log?: (msg: string) => void } = {},
) {
  const deadlineMs = opts.deadlineMs ?? 15_000;
  const log = opts.log ?? ((msg: string) => console.error(msg));
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    setTimeout(() => {
      log(`shutdown after ${signal} took longer than ${deadlineMs / 1000} s; exiting`);
      process.exit(1);
    }, deadlineMs).unref();
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        log(`shutdown after ${signal} failed: ${(err as Error)?.message ?? String(err)}`);
        process.exit(1);
      },
    );
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, onSignal);
}
