/**
 * Reading a process's Prometheus metrics as a scraper would: GET /metrics, then a metric's samples
 * (labels and value), or the sum of those whose labels match.
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

/** Every sample of `name`: its labels and value. */
export function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const found: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\w+)(?:\{(.*)\})? (\S+)/.exec(line);
    if (m && m[1] === name) found.push({ labels: labelsOf(m[2] ?? ''), value: Number(m[3]) });
  }
  return found;
}

/** The sum of the samples of `name` whose labels include `labels` (0 when none). */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number {
  return samples(text, name)
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** The value of a sample, scraped now. */
export async function scrapeValue(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleValue(await scrape(url), name, labels);
}
