/** A duration in words for people (mails, reasons): its largest fitting unit, e.g. "5 days", "36 h", "2 s". */
const UNITS: [ms: number, one: string, many: string][] = [
  [86_400_000, 'day', 'days'],
  [3_600_000, 'h', 'h'],
  [60_000, 'min', 'min'],
  [1_000, 's', 's'],
  [1, 'ms', 'ms'],
];

export function describeDuration(ms: number): string {
  const [size, one, many] = UNITS.find(([size]) => ms >= size) ?? UNITS.at(-1)!;
  const n = Math.round((ms / size) * 10) / 10;
  return `${n} ${n === 1 ? one : many}`;
}
