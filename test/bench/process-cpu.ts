/**
 * CPU seconds (user + system) of process trees, read from /proc: a process and all its descendants
 * (PostgreSQL's backends, Temporal's children), summed per name over the given root pids.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICK = 100; // USER_HZ

type ProcessTable = Map<number, { ppid: number; ticks: number }>;

function processTable(): ProcessTable {
  const table: ProcessTable = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // gone
    }
  }
  return table;
}

function treeSeconds(table: ProcessTable, rootPid: number): number {
  let ticks = 0;
  for (const [pid, p] of table) {
    for (let q: number | undefined = pid, hops = 0; q && hops < 10; q = table.get(q)?.ppid, hops++) {
      if (q === rootPid) {
        ticks += p.ticks;
        break;
      }
    }
  }
  return ticks / TICK;
}

/** CPU seconds so far of each named group of process trees. */
export function cpuSecondsByName(roots: Record<string, number[]>): Record<string, number> {
  const table = processTable();
  return Object.fromEntries(
    Object.entries(roots).map(([name, pids]) => [name, pids.reduce((s, pid) => s + treeSeconds(table, pid), 0)]),
  );
}
