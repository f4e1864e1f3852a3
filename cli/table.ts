/** The CLI's tables, as kubectl prints them: no borders, two spaces between columns, an AGE column. */
import Table from 'cli-table3';

const NO_BORDERS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '  ',
};

/** A borderless table with these column heads; `indent` spaces before each line (a section of a page). */
export function plainTable(head: string[], opts: { indent?: number } = {}): Table.Table {
  return new Table({
    head,
    chars: NO_BORDERS,
    style: { head: [], border: [], 'padding-left': opts.indent ?? 0, 'padding-right': 0 },
  });
}

/** kubectl's AGE column: 42s, 7m, 3h, 12d. */
export function age(since: string, now = Date.now()): string {
  const s = Math.max(0, Math.floor((now - Date.parse(since)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7_200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3_600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}
