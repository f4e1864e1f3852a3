/**
 * Installing the TenantClient CRD waits until it is Established (scripts/tenant-client-crd.ts): a
 * CRD read just after it was applied has no conditions yet, which is "not yet", never a failure
 * (`kubectl wait` failed there with ".status.conditions accessor error: <nil>").
 */
import { describe, expect, it } from 'vitest';
import { waitForCrdEstablished, type CrdState } from '../../scripts/tenant-client-crd.js';

const established = (status: string): CrdState => ({
  status: {
    conditions: [
      { type: 'NamesAccepted', status: 'True' },
      { type: 'Established', status, reason: status === 'True' ? 'InitialNamesAccepted' : 'Installing' },
    ],
  },
});

describe('waitForCrdEstablished', () => {
  it('waits through a CRD with no status, no conditions and Established=False until Established=True', async () => {
    const answers: (CrdState | Error)[] = [
      new Error('Error from server (NotFound): customresourcedefinitions "tenantclients.plana.dev" not found'),
      {},
      { status: {} },
      { status: { conditions: null } },
      established('False'),
      established('True'),
    ];
    let reads = 0;
    await waitForCrdEstablished(
      () => {
        const answer = answers[reads++]!;
        if (answer instanceof Error) throw answer;
        return answer;
      },
      'tenantclients.plana.dev',
      { intervalMs: 1 },
    );
    expect(reads).toBe(answers.length);
  });

  it('gives up after its timeout, saying what it saw last', async () => {
    await expect(
      waitForCrdEstablished(() => established('False'), 'tenantclients.plana.dev', { timeoutMs: 50, intervalMs: 5 }),
    ).rejects.toThrow(
      'The CustomResourceDefinition tenantclients.plana.dev is not Established after 0.05 s: Established=False (Installing: )',
    );
  });
});
