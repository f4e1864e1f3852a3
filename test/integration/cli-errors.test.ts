/**
 * The operator CLI says what was typed wrong in its own terms (the flag or argument), never in the
 * API's (`body.reason must be equal to constant`): bad options and arguments are refused before a
 * request is sent, and what the API still refuses names the flag the field came from. Runs the
 * CLI's program (runCli, as `npm run cli` does) against a real account API.
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../cli/index.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { testKeys } from '../support/service-keys.js';
import { kubeconfigPath } from '../support/kubernetes.js';
import { tempDir } from '../support/env.js';

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
  process.env.PLANA_API_URL = api.cfg.API_PUBLIC_URL;
  process.env.OPS_API_KEY = testKeys.operator;
});

afterAll(async () => {
  delete process.env.PLANA_API_URL;
  delete process.env.OPS_API_KEY;
  await api?.close();
});

/** Runs a command line; answers its exit code and everything it wrote to stderr. */
async function cli(args: string[], env: Record<string, string | undefined> = {}) {
  let stderr = '';
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  const error = vi.spyOn(console, 'error').mockImplementation((...parts: unknown[]) => {
    stderr += `${parts.join(' ')}\n`;
  });
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const code = await runCli(args);
    return { code, stderr };
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    write.mockRestore();
    error.mockRestore();
  }
}

const ENDPOINT = '3f6c1e2a-8b4d-4c1e-9a7b-2d5e6f708192';

describe('CLI errors in the CLI’s terms', () => {
  it.each([
    [
      'rotate-key with an unknown --reason',
      ['rotate-key', 'account-api', 'events', '--reason', 'bars'],
      ["'--reason <reason>'", "'bars'", 'annual, exposure'],
    ],
    [
      'rotate-key with a caller that is no service name',
      ['rotate-key', 'Account_API', 'events'],
      ["'caller'", 'service name'],
    ],
    [
      'users add with an unknown --role',
      ['users', 'add', '--workspace', 'demo', '--email', 'x@example.test', '--role', 'owner', '--no-password'],
      ["'--role <role>'", 'admin, member'],
    ],
    [
      'users add with a bad --email',
      ['users', 'add', '--workspace', 'demo', '--email', 'not-an-address', '--no-password'],
      ["'--email <email>'", 'e-mail address'],
    ],
    [
      'users add without --workspace',
      ['users', 'add', '--email', 'x@example.test'],
      ["'--workspace <slug>' not specified"],
    ],
    [
      'rate-limits set with a --burst that is no number',
      ['rate-limits', 'set', 'demo', '--burst', 'lots', '--per-second', '5'],
      ["'--burst <n>'", "'lots'", 'whole number'],
    ],
    [
      'rate-limits set with --per-second 0',
      ['rate-limits', 'set', 'demo', '--burst', '10', '--per-second', '0'],
      ["'--per-second <n>'", 'greater than 0'],
    ],
    [
      'get with a tenant name that is no DNS label',
      ['get', 'tenants', 'Bad_Name'],
      ["'name'", 'tenant name must match [a-z0-9-]+'],
    ],
    ['describe of an unknown resource type', ['describe', 'pods', 'acme'], ["'resource'", 'known: tenant, tenants']],
    ['retry of an unknown step', ['retry', 'database', 'acme'], ["'step'", 'chat-room']],
    [
      'bank-import with a day that does not exist',
      ['bank-import', 'demo', 'sandbox', 'acc-1', '--from', '2026-02-30'],
      ["'--from <date>'", 'YYYY-MM-DD'],
    ],
    [
      'bank-import with a --journal that is no id',
      ['bank-import', 'demo', 'sandbox', 'acc-1', '--journal', 'main'],
      ["'--journal <id>'", 'whole number'],
    ],
    [
      'replay-webhooks with an endpoint id that is no UUID',
      ['replay-webhooks', 'ep-1', '--message', 'msg_1'],
      ["'endpointId'", 'UUID'],
    ],
    [
      'replay-webhooks with a --since that is no time',
      ['replay-webhooks', ENDPOINT, '--since', 'yesterday'],
      ["'--since <time>'", 'ISO time'],
    ],
    [
      'replay-webhooks with both --message and --since',
      ['replay-webhooks', ENDPOINT, '--message', 'msg_1', '--since', '2026-01-01T00:00:00Z'],
      ['--message', '--since', 'cannot be used with'],
    ],
    [
      'replay-webhooks without saying what',
      ['replay-webhooks', ENDPOINT],
      ['say what to replay: --message <id>, or --since <time>'],
    ],
    ['an unknown --output', ['service-keys', '-o', 'yaml'], ["--output <format>'", 'table, json']],
    [
      'restore with a --backup that is no backup id',
      ['restore', 'acme', '--backup', 'latest'],
      ["'--backup <id>'", 'backup id such as acme/20261126T101500000Z'],
    ],
    [
      'restore with a --keep-for that is no number',
      ['restore', 'acme', '--keep-for', 'soon'],
      ["'--keep-for <minutes>'", 'whole number'],
    ],
    [
      'restore with --keep-for and --in-place',
      ['restore', 'acme', '--in-place', '--keep-for', '5'],
      ['--keep-for', 'cannot be used with', '--in-place'],
    ],
    [
      'restore with --confirm but not --in-place',
      ['restore', 'acme', '--confirm', 'acme'],
      ['--confirm goes with --in-place.'],
    ],
    ['drills of a name that is no tenant name', ['drills', 'Bad_Name'], ["'tenant'", 'A tenant name']],
  ])('refuses %s before calling the API, naming the flag or argument', async (_label, args, expected) => {
    const out = await cli(args);
    expect(out.code).toBe(1);
    for (const text of expected) expect(out.stderr).toContain(text);
    expect(out.stderr).not.toMatch(/body\.|params\.|equal to constant|anyOf/);
  });

  it('names the flag when the API refuses a value the CLI let through', async () => {
    const out = await cli(['users', 'add', '--workspace', 'demo', '--email', 'short-pw@example.test'], {
      PLANA_USER_PASSWORD: 'short',
    });
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(
      'error: the password (PLANA_USER_PASSWORD or the prompt) must be at least 12 characters long',
    );
    expect(out.stderr).not.toContain('body.');

    const reset = await cli([
      'users',
      'add',
      '--workspace',
      'demo',
      '--email',
      'reset@example.test',
      '--no-password',
      '--reset-password',
    ]);
    expect(reset.code).toBe(1);
    expect(reset.stderr).toContain('error: --reset-password needs the password (PLANA_USER_PASSWORD or the prompt)');
  });

  it('apply -f of a file that is not there: says so in words, with the usage exit code', async () => {
    const file = path.join(tempDir('cli-apply'), 'no-such-tenant.yaml');
    const out = await cli(['apply', '-f', file]);
    expect(out.code).toBe(1);
    expect(out.stderr).toBe(`error: no such file: ${file}\n`);
  });

  it('erp post-invoice of a tenant that does not exist: exit code 4, as documented', async () => {
    // as a process of its own, on the run's database (the command reads DATABASE_URL, not the ops API)
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const out = await promisify(execFile)(
      `${root}node_modules/.bin/tsx`,
      [`${root}cli/index.ts`, 'erp', 'post-invoice', 'nosuch'],
      { cwd: root, env: { PATH: process.env.PATH, DATABASE_URL: api.cfg.DATABASE_URL } },
    ).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => err,
    );
    expect(out.stderr).toBe('error: tenant nosuch does not exist (npm run cli -- get tenants lists them)\n');
    expect(out.code).toBe(4);
  });

  it('a replay body with both messageId and since: the API names since, the field that does not go with the rest', async () => {
    const res = await fetch(`${api.cfg.API_PUBLIC_URL}/api/ops/webhooks/${ENDPOINT}/replay`, {
      method: 'POST',
      headers: { 'x-api-key': testKeys.operator, 'content-type': 'application/json' },
      body: JSON.stringify({ messageId: 'msg_1', since: 'x' }),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).errors).toEqual([
      {
        field: 'body.since',
        message: 'cannot be sent with messageId: the request takes messageId, or since (and until)',
      },
    ]);
  });

  it('says what does not exist, with exit code 4', async () => {
    const out = await cli(['describe', 'tenant', 'no-such-tenant'], { KUBECONFIG: kubeconfigPath() });
    expect(out.code).toBe(4);
    expect(out.stderr).toBe('error: TenantClient "no-such-tenant" does not exist.\n');
  });

  it('says where the tenant commands look for the Kubernetes API when nothing says', async () => {
    const dataDir = tempDir('cli-no-dev');
    const out = await cli(['get', 'tenants'], { KUBECONFIG: '', DATA_DIR: dataDir });
    expect(out.code).toBe(1);
    expect(out.stderr).toBe(
      `error: No Kubernetes credentials: set KUBECONFIG, or start \`npm run dev\` (its kubeconfig ${path.join(dataDir, 'kubernetes', 'kubeconfig')} does not exist), or run in a pod (KUBERNETES_SERVICE_HOST is not set).\n`,
    );
  });

  it('without KUBECONFIG, the tenant commands use the running npm run dev’s kubeconfig, and say so', async () => {
    // a second terminal without the banner's export line: DATA_DIR/kubernetes/kubeconfig is npm run dev's
    const dataDir = tempDir('cli-dev');
    mkdirSync(path.join(dataDir, 'kubernetes'));
    const devKubeconfig = path.join(dataDir, 'kubernetes', 'kubeconfig');
    copyFileSync(kubeconfigPath(), devKubeconfig);
    const out = await cli(['describe', 'tenant', 'no-such-tenant'], { KUBECONFIG: '', DATA_DIR: dataDir });
    // it reached the API server: the TenantClient does not exist there
    expect(out.stderr).toBe(
      `Using the kubeconfig of npm run dev: ${devKubeconfig} (KUBECONFIG is not set)\n` +
        'error: TenantClient "no-such-tenant" does not exist.\n',
    );
    expect(out.code).toBe(4);
  });

  it('an API server that does not answer: which one, and what to start', async () => {
    const dir = tempDir('cli-kubeconfig');
    const file = path.join(dir, 'kubeconfig');
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath());
    kc.clusters.forEach((c) => Object.assign(c, { server: 'https://127.0.0.1:9' }));
    writeFileSync(file, kc.exportConfig());
    const out = await cli(['get', 'tenants'], { KUBECONFIG: file });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(
      /^error: Cannot reach the Kubernetes API with the kubeconfig .*kubeconfig \(user [^)]+\) \(.*\)\. Is `npm run dev` running\?\n$/,
    );
  });
});
