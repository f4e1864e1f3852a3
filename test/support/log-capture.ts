/** A log destination a test reads: every JSON line a server writes, parsed. */
export function logCapture() {
  const lines: Record<string, unknown>[] = [];
  return {
    stream: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    lines,
    /** The lines of one request (by its request id). */
    of: (requestId: string) => lines.filter((l) => l.reqId === requestId || l.requestId === requestId),
    text: () => lines.map((l) => JSON.stringify(l)).join('\n'),
  };
}
