/**
 * A stand-in for the Kubernetes API server and the kubelet's Secret volumes, which live outside the
 * platform: a real HTTP server answering the part of the core/v1 API the service-key store uses,
 * with Kubernetes' paths, objects and `Status` error bodies, and a bearer-token check.
 *
 *   GET   /api/v1/namespaces/{ns}/secrets/{name}
 *   POST  /api/v1/namespaces/{ns}/secrets                 create (409 AlreadyExists)
 *   PATCH /api/v1/namespaces/{ns}/secrets/{name}          application/merge-patch+json or
 *                                                         application/strategic-merge-patch+json;
 *                                                         `data` entries merged, null deletes one;
 *                                                         metadata.resourceVersion, when sent, must
 *                                                         match (409 Conflict otherwise)
 *
 * After every change it writes the Secret's volume under `<volumeRoot>/<ns>/<name>` as the kubelet's
 * atomic writer does: the files in a new `..<timestamp>` directory, a `..data_tmp` symlink to it
 * renamed over `..data`, the visible files symlinks `<key> -> ..data/<key>`, then the old directory
 * removed. Request log lines hold method, path, status and time only (never a body).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';

interface Secret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  type: string;
  data: Record<string, string>;
}

export interface KubernetesStandInOptions {
  host?: string;
  /** 0 = a free port. */
  port?: number;
  /** The bearer token the API accepts (the service account's). */
  token: string;
  /** Where Secret volumes are written (`<volumeRoot>/<ns>/<name>`); unset = no volumes. */
  volumeRoot?: string;
  /** One line per request (default: stdout). */
  log?: (line: string) => void;
  /** Serve https with this key and certificate (PEM), as a real API server does. */
  tls?: { key: string | Buffer; cert: string | Buffer };
}

export interface KubernetesStandIn {
  url: string;
  volumeDir(namespace: string, name: string): string;
  close(): Promise<void>;
}

// metav1.Status, as the API server sends it for every error
function status(
  reply: FastifyReply,
  code: number,
  reason: string,
  message: string,
  details?: { name?: string; kind?: string },
) {
  return reply
    .code(code)
    .type('application/json')
    .send({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      ...(details ? { details } : {}),
      code,
    });
}

// validation.IsConfigMapKey and RFC 1123 subdomain names
const DATA_KEY = /^[-._a-zA-Z0-9]+$/;
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export async function startKubernetesStandIn(opts: KubernetesStandInOptions): Promise<KubernetesStandIn> {
  const secrets = new Map<string, Secret>();
  let resourceVersion = 1000;
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const volumeDir = (ns: string, name: string) => path.join(opts.volumeRoot ?? '', ns, name);

  // as FastifyInstance: the https variant's generics differ, the routes are the same
  const app = (opts.tls ? Fastify({ logger: false, https: opts.tls }) : Fastify({ logger: false })) as FastifyInstance;
  for (const type of ['application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/json']) {
    app.removeContentTypeParser(type);
    app.addContentTypeParser(type, { parseAs: 'string' }, (_req, body, done) => {
      try {
        done(null, JSON.parse(body as string));
      } catch {
        const err = new Error('the body is not JSON') as Error & { statusCode: number };
        err.statusCode = 400;
        done(err, undefined);
      }
    });
  }

  app.addHook('onResponse', async (req, reply) => {
    log(
      `kubernetes-stand-in ${req.method} ${req.url.split('?')[0]} ${reply.statusCode} ${Math.round(reply.elapsedTime)}ms`,
    );
  });

  app.addHook('onRequest', async (req, reply) => {
    if (req.headers.authorization !== `Bearer ${opts.token}`) return status(reply, 401, 'Unauthorized', 'Unauthorized');
  });

  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    const code = err.statusCode ?? 500;
    if (code === 415)
      return status(reply, 415, 'UnsupportedMediaType', 'the body of the request was in an unknown format');
    return status(
      reply,
      code,
      code === 400 ? 'BadRequest' : 'InternalError',
      code === 400
        ? 'the request body is not valid JSON'
        : 'an error on the server has prevented the request from succeeding',
    );
  });
  app.setNotFoundHandler((_req, reply) =>
    status(reply, 404, 'NotFound', 'the server could not find the requested resource'),
  );

  const invalid = (reply: FastifyReply, name: string, message: string) =>
    status(reply, 422, 'Invalid', `Secret "${name}" is invalid: ${message}`, { name, kind: 'Secret' });

  /** Checks `data` keys and base64 values; the message names a key, never a value. */
  function badData(data: Record<string, unknown>): string | undefined {
    for (const [k, v] of Object.entries(data)) {
      if (!DATA_KEY.test(k) || k.length > 253)
        return `data[${k}]: Invalid value: a valid config key must consist of alphanumeric characters, '-', '_' or '.'`;
      if (v !== null && (typeof v !== 'string' || !BASE64.test(v)))
        return `data[${k}]: Invalid value: illegal base64 data`;
    }
    return undefined;
  }

  function changed(secret: Secret) {
    secret.metadata.resourceVersion = String(++resourceVersion);
    if (opts.volumeRoot) writeVolume(volumeDir(secret.metadata.namespace, secret.metadata.name), secret.data);
  }

  app.get<{ Params: { ns: string; name: string } }>('/api/v1/namespaces/:ns/secrets/:name', async (req, reply) => {
    const s = secrets.get(`${req.params.ns}/${req.params.name}`);
    if (!s)
      return status(reply, 404, 'NotFound', `secrets "${req.params.name}" not found`, {
        name: req.params.name,
        kind: 'secrets',
      });
    return s;
  });

  app.post<{ Params: { ns: string }; Body: Partial<Secret> }>('/api/v1/namespaces/:ns/secrets', async (req, reply) => {
    const body = req.body ?? {};
    const name = body.metadata?.name ?? '';
    if (body.kind !== 'Secret' || !NAME.test(name))
      return invalid(reply, name, 'metadata.name: Invalid value: a lowercase RFC 1123 subdomain is required');
    const bad = badData(body.data ?? {});
    if (bad) return invalid(reply, name, bad);
    const id = `${req.params.ns}/${name}`;
    if (secrets.has(id))
      return status(reply, 409, 'AlreadyExists', `secrets "${name}" already exists`, { name, kind: 'secrets' });
    const secret: Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace: req.params.ns,
        uid: randomUUID(),
        resourceVersion: '',
        creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        ...(body.metadata?.labels ? { labels: body.metadata.labels } : {}),
        ...(body.metadata?.annotations ? { annotations: body.metadata.annotations } : {}),
      },
      type: body.type ?? 'Opaque',
      data: { ...(body.data ?? {}) },
    };
    secrets.set(id, secret);
    changed(secret);
    return reply.code(201).send(secret);
  });

  app.patch<{
    Params: { ns: string; name: string };
    Body: {
      metadata?: {
        resourceVersion?: string;
        labels?: Record<string, string | null>;
        annotations?: Record<string, string | null>;
      };
      data?: Record<string, string | null>;
    };
  }>('/api/v1/namespaces/:ns/secrets/:name', async (req, reply) => {
    const { ns, name } = req.params;
    const type = String(req.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim();
    if (type !== 'application/merge-patch+json' && type !== 'application/strategic-merge-patch+json') {
      return status(
        reply,
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`,
      );
    }
    const secret = secrets.get(`${ns}/${name}`);
    if (!secret) return status(reply, 404, 'NotFound', `secrets "${name}" not found`, { name, kind: 'secrets' });
    const patch = req.body ?? {};
    if (
      patch.metadata?.resourceVersion !== undefined &&
      patch.metadata.resourceVersion !== secret.metadata.resourceVersion
    ) {
      return status(
        reply,
        409,
        'Conflict',
        `Operation cannot be fulfilled on secrets "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        { name, kind: 'secrets' },
      );
    }
    const bad = badData(patch.data ?? {});
    if (bad) return invalid(reply, name, bad);
    for (const [k, v] of Object.entries(patch.data ?? {})) {
      if (v === null) delete secret.data[k];
      else secret.data[k] = v;
    }
    for (const field of ['labels', 'annotations'] as const) {
      for (const [k, v] of Object.entries(patch.metadata?.[field] ?? {})) {
        const map = (secret.metadata[field] ??= {});
        if (v === null) delete map[k];
        else map[k] = v;
      }
    }
    changed(secret);
    return secret;
  });

  await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  const { address, port } = app.server.address() as AddressInfo;
  return { url: `${opts.tls ? 'https' : 'http'}://${address}:${port}`, volumeDir, close: () => app.close() };
}

/** The kubelet's AtomicWriter: new timestamped directory, `..data` swapped by rename, visible files as symlinks. */
export function writeVolume(dir: string, data: Record<string, string>) {
  mkdirSync(dir, { recursive: true });
  const now = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  const stamp = `..${now.getUTCFullYear()}_${pad(now.getUTCMonth() + 1)}_${pad(now.getUTCDate())}_${pad(now.getUTCHours())}_${pad(now.getUTCMinutes())}_${pad(now.getUTCSeconds())}.${randomBytes(5).readUInt32BE(0)}`;
  const tsDir = path.join(dir, stamp);
  mkdirSync(tsDir, { mode: 0o755 });
  for (const [k, v] of Object.entries(data))
    writeFileSync(path.join(tsDir, k), Buffer.from(v, 'base64'), { mode: 0o644 });

  const dataLink = path.join(dir, '..data');
  let old: string | undefined;
  try {
    old = readlinkSync(dataLink);
  } catch {
    old = undefined;
  }
  const tmp = path.join(dir, '..data_tmp');
  rmSync(tmp, { force: true });
  symlinkSync(stamp, tmp);
  renameSync(tmp, dataLink); // the atomic swap readers see

  for (const k of Object.keys(data)) {
    const visible = path.join(dir, k);
    if (!existsSync(visible)) symlinkSync(path.join('..data', k), visible);
  }
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith('..')) continue;
    if (!(entry in data)) rmSync(path.join(dir, entry), { force: true });
  }
  if (old && old !== stamp) rmSync(path.join(dir, old), { recursive: true, force: true });
}

/** Run directly: `tsx sandbox/kubernetes/server.ts` (KUBERNETES_STANDIN_PORT, KUBERNETES_STANDIN_TOKEN, volumes under DATA_DIR/kubernetes/volumes). */
if (import.meta.url === `file://${process.argv[1]}`) {
  const { config } = await import('../../lib/config.js');
  const cfg = config();
  const k8s = await startKubernetesStandIn({
    port: Number(process.env.KUBERNETES_STANDIN_PORT ?? 6443),
    token: process.env.KUBERNETES_STANDIN_TOKEN ?? 'dev-kubernetes-token-000000000000',
    volumeRoot: path.join(cfg.DATA_DIR, 'kubernetes', 'volumes'),
  });
  console.log(
    `kubernetes stand-in (core/v1 Secrets) on ${k8s.url}; volumes under ${path.join(cfg.DATA_DIR, 'kubernetes', 'volumes')}`,
  );
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void k8s.close());
}
