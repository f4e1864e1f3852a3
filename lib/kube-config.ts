/**
 * The platform's Kubernetes credentials (@kubernetes/client-node): the kubeconfig file at KUBECONFIG
 * when it is set (`npm run dev` writes one under DATA_DIR/kubernetes; its current context), else the
 * pod's in-cluster credentials: the service account's projected token (re-read every minute, as it
 * rotates) and the cluster CA under /var/run/secrets/kubernetes.io/serviceaccount, at
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (set by Kubernetes in every pod).
 */
import { KubeConfig } from '@kubernetes/client-node';
import { AppError } from './errors.js';

export interface KubeCredentials {
  kubeConfig: KubeConfig;
  /** Where the credentials come from, for error messages (never the credential itself). */
  source: string;
}

/** `inClusterRoot` prefixes the service-account paths (a test's folder); production leaves it empty. */
export function kubeCredentials(kubeconfigPath: string | undefined, inClusterRoot = ''): KubeCredentials {
  const kubeConfig = new KubeConfig();
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
