/** Runs `fn` over the items, `size` at a time; every item is tried, the first error is thrown at the end. */
export async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let firstError: unknown;
  const lanes = Array.from({ length: Math.min(size, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      // one object's failure (a 409 on a stale version, the API server away) never stops the others
      await fn(item).catch((err: unknown) => (firstError ??= err));
    }
  });
  await Promise.all(lanes);
  if (firstError) throw firstError;
}
