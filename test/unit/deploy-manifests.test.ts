/**
 * deploy/kubernetes against the code and docker-compose.yml (no API server needed; the API server's
 * own checks are in test/integration/kubernetes/deploy-manifests.test.ts): the CRD manifest is the
 * one domain/tenants/tenant-client-crd.ts generates, and each workload runs what the compose file's
 * service of the same name runs (image, command, the same configuration names) with a configuration
 * that parses, its secrets from the Secret plana-env and its service keys where the store reads them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { configSchema, parseConfig } from '../../lib/config.js';
import { CRD_MANIFEST, crdManifest, deployDir } from '../../scripts/deploy-manifests.js';
import { erpVersions } from '../../domain/tenants/types.js';
import { ERP_SERVICE } from '../../services/tenant-controller/composed-manifests.js';

interface Container {
  image: string;
  command: string[];
  ports?: { name: string; containerPort: number }[];
  envFrom?: { configMapRef?: { name: string } }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  serviceAccountName: string;
  containers: Container[];
  volumes?: { name: string; projected?: { sources: { secret?: { name: string; optional?: boolean } }[] } }[];
}
interface Obj {
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: {
    template?: { metadata: { annotations?: Record<string, string> }; spec: PodSpec };
    type?: string;
    externalName?: string;
    ports?: { port: number }[];
  };
}

const objects: Obj[] = readdirSync(deployDir)
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((f) => parseAllDocuments(readFileSync(path.join(deployDir, f), 'utf8')).map((d) => d.toJS() as Obj));
const workloads = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job');
const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'plana-config')!;

const compose = parse(readFileSync(path.resolve(deployDir, '../../docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { image?: string; command?: string[]; environment?: Record<string, unknown> }>;
};
/** Names only Kubernetes sets (its secret store) or only compose sets (the controller's mounted kubeconfig). */
const KUBERNETES_ONLY = ['SECRET_STORE', 'KUBERNETES_NAMESPACE'];
const COMPOSE_ONLY = ['KUBECONFIG'];
/** The processes that call another service with a service key (domain/service-keys/inventory.ts); the others hold none. */
const SERVICE_KEY_CALLERS = ['api', 'worker', 'agents', 'tenant-ingress', 'provisioned-consumer'];

describe('deploy/kubernetes', () => {
  it('holds the TenantClient CRD as domain/tenants/tenant-client-crd.ts defines it (npm run deploy:manifests)', () => {
    expect(readFileSync(path.join(deployDir, CRD_MANIFEST), 'utf8')).toBe(crdManifest());
  });

  it('runs every platform process of docker-compose.yml (the services of its image), and nothing else', () => {
    const processes = Object.entries(compose.services)
      .filter(([, s]) => s.image === 'plana/control-plane:0.1.0')
      .map(([name]) => name);
    expect(workloads.map((w) => w.metadata.name).sort()).toEqual(processes.sort());
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

  describe.each(workloads.map((w) => [w.metadata.name, w] as const))('%s', (name, workload) => {
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
