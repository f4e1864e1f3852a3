/**
 * The platform's Kubernetes credentials (@kubernetes/client-node): the kubeconfig file at KUBECONFIG
 * when it is set (`npm run dev` writes one under DATA_DIR/kubernetes; its current context), else the
 * pod's in-cluster credentials: the service account's projected token (re-read every minute, as it
 * rotates) and the cluster CA under /var/run/secrets/kubernetes.io/serviceaccount, at
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (set by Kubernetes in every pod).
 */
import { createHash } from 'node:crypto';
import type { Agent } from 'node:http';
import type { AgentOptions } from 'node:https';
import { KubeConfig, type Cluster } from '@kubernetes/client-node';
import { AppError } from './errors.js';

export interface KubeCredentials {
  kubeConfig: KubeConfig;
  /** Where the credentials come from, for error messages (never the credential itself). */
  source: string;
}

/** `inClusterRoot` prefixes the service-account paths (a test's folder); production leaves it empty. */
export function kubeCredentials(kubeconfigPath: string | undefined, inClusterRoot = ''): KubeCredentials {
  const kubeConfig = new KubeConfig();
  keepConnections(kubeConfig);
  if (kubeconfigPath) {
    try {
      kubeConfig.loadFromFile(kubeconfigPath);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new AppError(
        'UNAVAILABLE',
        `Cannot read the kubeconfig at ${kubeconfigPath} (KUBECONFIG): ${code ?? 'not a kubeconfig'}.`,
      );
    }
    const user = kubeConfig.getCurrentUser()?.name ?? 'no user';
    return { kubeConfig, source: `the kubeconfig ${kubeconfigPath} (user ${user})` };
  }
  if (!process.env.KUBERNETES_SERVICE_HOST)
    throw new AppError(
      'UNAVAILABLE',
      'No Kubernetes credentials: set KUBECONFIG, or run in a pod (KUBERNETES_SERVICE_HOST is not set).',
    );
  kubeConfig.loadFromCluster(inClusterRoot);
  return {
    kubeConfig,
    source: `the pod's service account (${inClusterRoot}/var/run/secrets/kubernetes.io/serviceaccount)`,
  };
}

/**
 * One keep-alive agent for all the calls made with the same TLS settings, instead of the client's
 * new agent (so a new connection, TLS handshake and secure context) for every call. The settings
 * are the cluster's address, its CA and a client certificate if any; a token is a header of each
 * call, so a rotated token needs no new agent, and a changed certificate gets one.
 */
function keepConnections(kubeConfig: KubeConfig): void {
  const client = kubeConfig as unknown as { createAgent(cluster: Cluster | null, options: AgentOptions): Agent };
  const create = client.createAgent.bind(kubeConfig);
  const agents = new Map<string, Agent>();
  client.createAgent = (cluster, options) => {
    const settings = createHash('sha256');
    for (const part of [cluster?.server, cluster?.proxyUrl, options.servername, String(options.rejectUnauthorized)])
      settings.update(`${part ?? ''}\0`);
    for (const part of [options.ca, options.cert, options.key, options.pfx])
      settings.update(part === undefined ? '' : String(part)).update('\0');
    const key = settings.digest('base64');
    let agent = agents.get(key);
    if (!agent) {
      agent = create(cluster, { ...options, keepAlive: true });
      agents.set(key, agent);
    }
    return agent;
  };
}
