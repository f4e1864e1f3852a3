/**
 * The test run's private Kubernetes API server (scripts/local-kubernetes.ts): kubectl reaches it
 * with the kubeconfig the global setup provides, only the admin credential is let in (RBAC), and
 * Secrets are encrypted at rest in etcd.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { kubectl } from '../../../scripts/local-servers.js';

const kubeconfig = () => inject('kubeconfigPath');

describe('the Kubernetes API server of the test run', () => {
  it('answers kubectl with the admin kubeconfig, as the pinned version', () => {
    const version = JSON.parse(kubectl(kubeconfig(), ['version', '-o', 'json'])) as {
      serverVersion: { gitVersion: string };
    };
    expect(version.serverVersion.gitVersion).toBe('v1.34.4');
    expect(kubectl(kubeconfig(), ['auth', 'can-i', '*', '*']).trim()).toBe('yes');
  });

  it('refuses a caller without a credential (RBAC, anonymous is no one)', () => {
    const server = kubectl(kubeconfig(), ['config', 'view', '-o', 'jsonpath={.clusters[0].cluster.server}']);
    let stderr = '';
    try {
      kubectl(kubeconfig(), ['--token=not-a-token', `--server=${server}`, 'get', 'secrets']);
    } catch (err) {
      stderr = String((err as { stderr?: string }).stderr);
    }
    expect(stderr).toMatch(/Unauthorized|must be logged in/);
  });

  it('keeps Secrets encrypted in etcd', () => {
    const value = `probe-${randomBytes(12).toString('hex')}`;
    const name = `probe-${randomBytes(4).toString('hex')}`;
    kubectl(kubeconfig(), ['create', 'secret', 'generic', name, `--from-literal=value=${value}`]);
    const read = kubectl(kubeconfig(), ['get', 'secret', name, '-o', 'jsonpath={.data.value}']);
    expect(Buffer.from(read, 'base64').toString()).toBe(value);

    const etcdData = path.join(path.dirname(kubeconfig()), 'etcd', 'data');
    const files = walk(etcdData).map((f) => readFileSync(f));
    expect(files.some((b) => b.includes(`/registry/secrets/default/${name}`))).toBe(true);
    expect(files.some((b) => b.includes(value))).toBe(false);
    expect(files.some((b) => b.includes('k8s:enc:aescbc:v1:key1'))).toBe(true);
  });
});

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const f = path.join(dir, name);
    return statSync(f).isDirectory() ? walk(f) : [f];
  });
}
