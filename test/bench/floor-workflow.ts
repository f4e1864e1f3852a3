/**
 * The workflow of `npm run bench:temporal-floor`: the tenant lifecycle's shape with no work in it,
 * `remote` activities and `local` local activities that return at once, so what it costs is
 * Temporal's own work (the server, its persistence, the SDK's worker) and nothing else.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

interface NoWork {
  noWork(step: number): Promise<number>;
}
const remoteStep = proxyActivities<NoWork>({ startToCloseTimeout: '1 minute' });
const localStep = proxyLocalActivities<NoWork>({ startToCloseTimeout: '1 minute' });

export async function emptyLifecycle(remote: number, local: number): Promise<number> {
  let steps = 0;
  for (let i = 0; i < Math.max(remote, local); i++) {
    if (i < remote) steps += await remoteStep.noWork(i);
    if (i < local) steps += await localStep.noWork(i);
  }
  return steps;
}
