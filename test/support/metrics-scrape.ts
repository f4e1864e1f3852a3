/**
 * Reading a process's Prometheus metrics as a scraper would: GET /metrics, then the value of a
 * metric's samples whose labels match (summed over the samples that match).
 */

/** The exposition text of a metrics endpoint (throws unless answered 200). */
export async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${text.slice(0, 200)}`);
  return text;
}

/** The labels of one sample line (`name{a="x",b="y"} 3`). */
function labelsOf(inner: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of inner.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1]!] = m[2]!.replace(/\\(.)/g, '$1');
  return labels;
}

/** The sum of the samples of `name` whose labels include `labels` (0 when none). */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\w+)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = labelsOf(m[2] ?? '');
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

/** The value of a sample, scraped now. */
export async function scrapeValue(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleValue(await scrape(url), name, labels);
}
