/**
 * cyclonus (github.com/mattfenwick/cyclonus), a NetworkPolicy analyzer, run in its analysis mode
 * `analyze --mode probe`: it evaluates the policies for a model of pods (namespaces, labels, IPs,
 * named ports) and prints, per probed port, the truth table of every pod to every pod ("." where the
 * policies admit the connection, "X" where they do not). Built once on first use
 * (scripts/build-cyclonus.sh, its progress on this process's output) into the cache folder.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const CYCLONUS_VERSION = '0.5.6';
const cacheDir = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'),
  'plana',
  `cyclonus-${CYCLONUS_VERSION}`,
);

/** The cyclonus binary, built into the cache folder the first time. */
export function ensureCyclonus(): string {
  const binary = path.join(cacheDir, 'cyclonus');
  if (!existsSync(binary)) {
    const script = fileURLToPath(new URL('../../scripts/build-cyclonus.sh', import.meta.url));
    const build = spawnSync('bash', [script, cacheDir], { stdio: 'inherit' });
    if (build.status !== 0) throw new Error(`could not build cyclonus ${CYCLONUS_VERSION} (see above)`);
  }
  return binary;
}

/** A pod of the model: each named port is one container (cyclonus probes a container's one port). */
export interface ModelPod {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  ip: string;
  ports: { name: string; port: number; protocol?: 'TCP' | 'UDP' }[];
}

/** One allowed connection: `from` and `to` are `<namespace>/<pod>`, `port` the probed port's name. */
export interface Connection {
  from: string;
  to: string;
  port: string;
}

/**
 * The connections the policies admit among `pods`, probing each named port in `ports` (with its
 * protocol): cyclonus's combined (ingress and egress) truth table, read cell by cell.
 */
export function analyze(
  policies: object[],
  pods: ModelPod[],
  ports: { name: string; protocol: 'TCP' | 'UDP' }[],
): Connection[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'cyclonus-'));
  try {
    const policyFile = path.join(dir, 'policies.json');
    writeFileSync(
      policyFile,
      JSON.stringify({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicyList', items: policies }),
    );
    const namespaces = Object.fromEntries(
      [...new Set(pods.map((p) => p.namespace))].map((ns) => [ns, { 'kubernetes.io/metadata.name': ns }]),
    );
    const model = {
      Resources: {
        Namespaces: namespaces,
        Pods: pods.map((p) => ({
          Namespace: p.namespace,
          Name: p.name,
          Labels: p.labels,
          IP: p.ip,
          Containers: p.ports.map((c) => ({
            Name: c.name,
            Port: c.port,
            Protocol: c.protocol ?? 'TCP',
            PortName: c.name,
          })),
        })),
      },
      Probes: ports.map((p) => ({ Port: p.name, Protocol: p.protocol })),
    };
    const modelFile = path.join(dir, 'model.json');
    writeFileSync(modelFile, JSON.stringify(model));
    const out = execFileSync(
      ensureCyclonus(),
      ['analyze', '--mode', 'probe', '--probe-path', modelFile, '--policy-path', policyFile],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 },
    );
    return readCombinedTables(out, pods, ports.length);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The "Combined:" tables of cyclonus's output, one per probed port: rows and columns are the pods
 * (`namespace/name`, in the same order; the header is upper-cased, so the row labels name the
 * columns), each cell `<protocol>/<port number>: <result>`; the port's name is the destination pod's
 * port of that number and protocol.
 */
function readCombinedTables(out: string, pods: ModelPod[], probes: number): Connection[] {
  // after the probes of the model comes one of the pods cyclonus read from a cluster: none here, an empty table
  const tables = out
    .split('Combined:\n')
    .slice(1, probes + 1)
    .map((t) => t.split('\n\n')[0]!);
  if (tables.length !== probes) throw new Error(`cyclonus printed ${tables.length} tables for ${probes} ports`);
  const podByKey = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  return tables.flatMap((table) => {
    const rows = table
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('|  '))
      .map((l) =>
        l
          .split('|')
          .slice(1, -1)
          .map((c) => c.trim()),
      );
    const keys = rows.map((r) => r[0]!);
    return rows.flatMap((r) =>
      r.slice(1).flatMap((cell, col) => {
        const m = /^(TCP|UDP)\/(-?\d+): ([.XNP?!])$/.exec(cell);
        if (!m) throw new Error(`unexpected cell "${cell}" in cyclonus's table`);
        if (m[3] !== '.') return [];
        const to = keys[col]!;
        const port = podByKey.get(to)!.ports.find((p) => p.port === Number(m[2]) && (p.protocol ?? 'TCP') === m[1]);
        if (!port) throw new Error(`cyclonus probed ${to} on ${m[1]}/${m[2]}, which the model does not give it`);
        return [{ from: r[0]!, to, port: port.name }];
      }),
    );
  });
}
