/**
 * deploy/kubernetes/base against the code and docker-compose.yml (no API server needed; the API
 * server's own checks are in test/integration/kubernetes/deploy-manifests.test.ts): the generated
 * manifests (the CRD, the NetworkPolicies) are current, the kustomization holds every file, and each
 * workload runs what the compose file's service of the same name runs (image, command, the same
 * configuration names) with a configuration that parses, its secrets from the Secret plana-env, its
 * service keys where the store reads them, CPU and memory requests and limits, probes where it
 * serves, a disruption budget where it is replicated and a grace period its stop fits in.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { configSchema, parseConfig } from '../../lib/config.js';
import { deployDir, generatedManifests } from '../../scripts/deploy-manifests.js';
import { WORKER_SHUTDOWN_GRACE_MS } from '../../worker/index.js';
import { SERVICE_KEY_INVENTORY } from '../../domain/service-keys/inventory.js';
import { PLATFORM_PROCESSES } from '../../domain/service-keys/network.js';
import { erpVersions } from '../../domain/tenants/types.js';
import { ERP_SERVICE } from '../../services/tenant-controller/composed-manifests.js';

interface Probe {
  httpGet?: { path: string; port: string };
}
interface Container {
  image: string;
  command: string[];
  ports?: { name: string; containerPort: number }[];
  resources?: { requests?: { cpu?: string; memory?: string }; limits?: { cpu?: string; memory?: string } };
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  envFrom?: { configMapRef?: { name: string } }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  serviceAccountName: string;
  terminationGracePeriodSeconds?: number;
  containers: Container[];
  volumes?: { name: string; projected?: { sources: { secret?: { name: string; optional?: boolean } }[] } }[];
}
interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: {
    replicas?: number;
    selector?: { matchLabels: Record<string, string> };
    minAvailable?: number;
    template?: { metadata: { annotations?: Record<string, string> }; spec: PodSpec };
    type?: string;
    externalName?: string;
    ports?: { port: number }[];
  };
}

const manifestFiles = readdirSync(deployDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
const objects: Obj[] = manifestFiles.flatMap((f) =>
  parseAllDocuments(readFileSync(path.join(deployDir, f), 'utf8')).map((d) => d.toJS() as Obj),
);
/** The platform's workloads: its image's Deployments and Job (not the trace store's Zipkin). */
const workloads = objects.filter(
  (o) =>
    (o.kind === 'Deployment' || o.kind === 'Job') &&
    o.spec!.template!.spec.containers[0]!.image.startsWith('plana/control-plane:'),
);
/** The process a workload runs: its app.kubernetes.io/name (the migrate Job's name carries the version). */
const processOf = (w: Obj) => w.metadata.labels!['app.kubernetes.io/name']!;
const deployments = workloads.filter((w) => w.kind === 'Deployment');
/** CPU in cores from a Kubernetes quantity ("150m", "1"). */
const cores = (q: string) => (q.endsWith('m') ? Number(q.slice(0, -1)) / 1000 : Number(q));
const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'plana-config')!;

const compose = parse(readFileSync(path.resolve(deployDir, '../../../docker-compose.yml'), 'utf8'), {
  merge: true,
}) as {
  services: Record<string, { image?: string; command?: string[]; environment?: Record<string, unknown> }>;
};
/** Names only Kubernetes sets (its secret store) or only compose sets (the controller's mounted kubeconfig). */
const KUBERNETES_ONLY = ['SECRET_STORE', 'KUBERNETES_NAMESPACE'];
const COMPOSE_ONLY = ['KUBECONFIG'];
/** The processes the inventory's pairs call from (domain/service-keys/inventory.ts `from`): they hold service keys, the others none. */
const SERVICE_KEY_CALLERS: string[] = SERVICE_KEY_INVENTORY.flatMap((p) => p.from).filter((peer) =>
  (PLATFORM_PROCESSES as readonly string[]).includes(peer),
);

describe('deploy/kubernetes', () => {
  it.each(Object.keys(generatedManifests()))(
    'holds %s as its source generates it (npm run deploy:manifests after a change of the CRD or the inventory)',
    (file) => {
      expect(readFileSync(path.join(deployDir, file), 'utf8')).toBe(generatedManifests()[file]);
    },
  );

  it("lists every manifest file in the base's kustomization, and nothing else", () => {
    const kustomization = parse(readFileSync(path.join(deployDir, 'kustomization.yaml'), 'utf8')) as {
      resources: string[];
    };
    expect([...kustomization.resources].sort()).toEqual([...manifestFiles].sort());
  });

  it.each(['production', 'dev'])(
    "the %s overlay's config.env, merged over plana-config, is a configuration that parses",
    (overlay) => {
      const env = Object.fromEntries(
        readFileSync(path.join(deployDir, '../overlays', overlay, 'config.env'), 'utf8')
          .split('\n')
          .filter((l) => l.includes('='))
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      expect(Object.keys(env).filter((n) => !(n in configSchema.shape))).toEqual([]);
      const secrets = Object.fromEntries(
        ['DATABASE_URL', 'ERP_DATABASE_URL', 'SECRETS_KEY', 'AUTH_JWT_SECRET', 'STRIPE_WEBHOOK_SECRET', 'LLM_KEY']
          .concat(['CHAT_TOKEN', 'CHAT_TEAM_ID', 'ERP_ADMIN_PASSWORD', 'BANKING_BANKS'])
          .map((n) => [n, filledSecret(n)]),
      );
      expect(() => parseConfig({ ...configMap.data, ...env, ...secrets })).not.toThrow();
    },
  );

  it("routes the production overlay's public hosts, those of API_PUBLIC_URL and OIDC_PROVIDER_ISSUER, to the API and the auth service", () => {
    const overlay = path.join(deployDir, '../overlays/production');
    const env = readFileSync(path.join(overlay, 'config.env'), 'utf8');
    const host = (name: string) => new URL(new RegExp(`^${name}=(.*)$`, 'm').exec(env)![1]!).host;
    const ingress = parse(readFileSync(path.join(overlay, 'ingress.yaml'), 'utf8')) as {
      spec: { rules: { host: string; http: { paths: { backend: { service: { name: string } } }[] } }[] };
    };
    expect(ingress.spec.rules.map((r) => [r.host, r.http.paths[0]!.backend.service.name])).toEqual([
      [host('API_PUBLIC_URL'), 'api'],
      [host('OIDC_PROVIDER_ISSUER'), 'auth'],
    ]);
  });

  it('holds no Secret: every secret comes from plana-env, which the operator creates', () => {
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
  });

  it("names the migrate Job for the image's version (each release's install or upgrade runs its own)", () => {
    const job = workloads.find((w) => w.kind === 'Job')!;
    const tag = job.spec!.template!.spec.containers[0]!.image.split(':')[1];
    expect(job.metadata.name).toBe(`migrate-${tag}`);
    for (const w of workloads) expect(w.spec!.template!.spec.containers[0]!.image.split(':')[1]).toBe(tag);
  });

  it('has a PodDisruptionBudget keeping one pod of each replicated Deployment, and none for a single replica', () => {
    const budgets = objects.filter((o) => o.kind === 'PodDisruptionBudget');
    const replicated = deployments.filter((d) => (d.spec!.replicas ?? 1) > 1).map(processOf);
    expect(replicated.length).toBeGreaterThan(0);
    expect(budgets.map((b) => b.spec!.selector!.matchLabels['app.kubernetes.io/name']).sort()).toEqual(
      replicated.sort(),
    );
    for (const b of budgets) expect(b.spec!.minAvailable).toBe(1);
  });

  it("gives the events service half the webhook dispatcher's CPU request (compose's cpu_shares: 512)", () => {
    const cpu = (name: string) =>
      cores(
        deployments.find((d) => processOf(d) === name)!.spec!.template!.spec.containers[0]!.resources!.requests!.cpu!,
      );
    expect(cpu('events')).toBe(cpu('webhook-dispatcher') / 2);
  });

  it("lets the worker and the dispatcher stop within their pods' grace period", () => {
    const grace = (name: string) =>
      deployments.find((d) => processOf(d) === name)!.spec!.template!.spec.terminationGracePeriodSeconds ?? 30;
    // the SDK's grace for running activities, then the connections close
    expect(grace('worker')).toBeGreaterThanOrEqual(WORKER_SHUTDOWN_GRACE_MS / 1000 + 10);
    // the first attempts in flight (each at most WEBHOOK_TIMEOUT_MS), then their records and the lease
    expect(grace('webhook-dispatcher')).toBeGreaterThanOrEqual(parseConfig({}).WEBHOOK_TIMEOUT_MS / 1000 + 10);
  });

  it('runs every platform process of docker-compose.yml (the services of its image), and nothing else', () => {
    const processes = Object.entries(compose.services)
      .filter(([, s]) => s.image === 'plana/control-plane:0.1.0')
      .map(([name]) => name);
    expect(workloads.map(processOf).sort()).toEqual(processes.sort());
  });

  it('keeps service keys in Kubernetes Secrets of its own namespace', () => {
    expect(configMap.data).toMatchObject({ SECRET_STORE: 'kubernetes', KUBERNETES_NAMESPACE: 'plana' });
    expect(Object.values(configMap.data!).filter((v) => /127\.0\.0\.1|localhost/.test(v))).toEqual([]);
  });

  it("gives every version namespace the ERP Service the tenants' routes go to, through the tenant ingress", () => {
    for (const version of erpVersions) {
      const service = objects.find(
        (o) =>
          o.kind === 'Service' &&
          o.metadata.name === ERP_SERVICE.name &&
          o.metadata.namespace === `plana-odoo-${version}`,
      );
      expect(service?.spec).toMatchObject({
        type: 'ExternalName',
        externalName: 'tenant-ingress.plana.svc.cluster.local',
        ports: [{ port: ERP_SERVICE.port }],
      });
    }
    const tenantIngress = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'tenant-ingress');
    expect(tenantIngress?.spec?.ports).toMatchObject([{ port: ERP_SERVICE.port }]);
  });

  describe.each(workloads.map((w) => [processOf(w), w] as const))('%s', (name, workload) => {
    const pod = workload.spec!.template!.spec;
    const container = pod.containers[0]!;
    const service = compose.services[name]!;
    const secretRefs = (container.env ?? []).filter((e) => e.valueFrom?.secretKeyRef);
    const names = [...Object.keys(configMap.data!), ...(container.env ?? []).map((e) => e.name)];

    it('runs what docker-compose.yml runs: the same image and command', () => {
      expect(service).toBeDefined();
      expect(container.image).toBe(service.image);
      expect(container.command).toEqual(service.command);
    });

    it('gets the same configuration names as in docker-compose.yml, each known to the configuration', () => {
      const composeNames = Object.keys(service.environment ?? {}).filter((n) => !COMPOSE_ONLY.includes(n));
      expect([...names].sort()).toEqual([...composeNames, ...KUBERNETES_ONLY].sort());
      expect(names.filter((n) => !(n in configSchema.shape))).toEqual([]);
      expect(container.envFrom).toEqual([{ configMapRef: { name: 'plana-config' } }]);
    });

    it('takes its secrets from the Secret plana-env, and its configuration parses', () => {
      for (const e of secretRefs) expect(e.valueFrom!.secretKeyRef).toEqual({ name: 'plana-env', key: e.name });
      const fromSecret = Object.fromEntries(secretRefs.map((e) => [e.name, filledSecret(e.name)]));
      expect(() => parseConfig({ ...configMap.data, ...fromSecret })).not.toThrow();
    });

    it('serves its Prometheus metrics on the configured ports, annotated for scraping (Deployments)', () => {
      if (workload.kind !== 'Deployment')
        return expect(container.ports?.find((p) => p.name === 'metrics')).toBeUndefined();
      const port = (portName: string) => container.ports?.find((p) => p.name === portName)?.containerPort;
      expect(port('metrics')).toBe(Number(configMap.data!.METRICS_PORT));
      if (name === 'worker') expect(port('sdk-metrics')).toBe(Number(configMap.data!.TEMPORAL_METRICS_PORT));
      expect(workload.spec!.template!.metadata.annotations).toEqual({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': configMap.data!.METRICS_PORT,
      });
    });

    it('requests CPU and memory, and is limited in both (requests within the limits)', () => {
      const { requests, limits } = container.resources ?? {};
      expect(Object.keys(requests ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(Object.keys(limits ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(cores(requests!.cpu!)).toBeLessThanOrEqual(cores(limits!.cpu!));
      const mib = (q: string) => Number(/^(\d+)(Mi|Gi)$/.exec(q)![1]) * (q.endsWith('Gi') ? 1024 : 1);
      expect(mib(requests!.memory!)).toBeLessThanOrEqual(mib(limits!.memory!));
    });

    it('is probed for startup, liveness and readiness where it serves HTTP', () => {
      if (!container.ports?.some((p) => p.name === 'http'))
        return expect([container.readinessProbe, container.livenessProbe, container.startupProbe]).toEqual([
          undefined,
          undefined,
          undefined,
        ]);
      for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe])
        expect(probe?.httpGet).toMatchObject({ path: expect.stringMatching(/^\/(healthz|readyz)$/), port: 'http' });
    });

    it('runs as a ServiceAccount the manifests define', () => {
      const accounts = objects.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name);
      expect(accounts).toContain(pod.serviceAccountName);
    });

    it('mounts its service-key Secrets (optional) where the secret store reads them', () => {
      const mount = container.volumeMounts?.find((m) => m.name === 'service-keys');
      if (!SERVICE_KEY_CALLERS.includes(name)) return expect(mount).toBeUndefined();
      expect(mount?.mountPath).toBe(parseConfig({}).SECRETS_MOUNT_DIR);
      const sources = pod.volumes!.find((v) => v.name === 'service-keys')!.projected!.sources;
      for (const s of sources)
        expect(s.secret).toMatchObject({ name: expect.stringMatching(/^plana-service-keys-/), optional: true });
    });
  });
});

/** What an operator puts in plana-env (made-up values of the right shape). */
function filledSecret(name: string): string {
  if (name.endsWith('DATABASE_URL')) return 'postgres://plana:pw-from-the-secret@postgresql:5432/plana';
  if (name === 'SECRETS_KEY') return Buffer.alloc(32, 7).toString('base64');
  if (name === 'BANKING_BANKS') return 'example-bank=https://xs2a.bank.example/psd2';
  if (name === 'STRIPE_WEBHOOK_SECRET') return 'whsec_from-the-secret-store-0123456789';
  if (name === 'CHAT_TEAM_ID') return 'abcdefghijklmnopqrstuvwxyz';
  return `${name.toLowerCase()}-from-the-secret-store-0123456789`;
}
