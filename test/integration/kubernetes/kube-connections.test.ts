/**
 * The platform's Kubernetes client keeps its connections: calls made with the same credentials go
 * over one kept-alive TLS connection, not a new connection (and handshake) each (lib/kube-config.ts).
 */
import tls from 'node:tls';
import { CoreV1Api } from '@kubernetes/client-node';
import { expect, inject, it, vi } from 'vitest';
import { kubeCredentials } from '../../../lib/kube-config.js';

it('makes sequential calls over one TLS connection', async () => {
  const core = kubeCredentials(inject('kubeconfigPath')).kubeConfig.makeApiClient(CoreV1Api);
  const connect = vi.spyOn(tls, 'connect');
  try {
    for (let i = 0; i < 5; i++) await core.listNamespace({ limit: 1 });
    expect(connect).toHaveBeenCalledTimes(1);
  } finally {
    connect.mockRestore();
  }
});
