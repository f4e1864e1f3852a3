/**
 * The support actions on the ops API, one command each naming its workflow: `cancel|reactivate
 * tenant <name>` and `retry chat-room <name>`. `delete tenant <name>` deletes the TenantClient on the
 * Kubernetes API, as `kubectl delete` does (the controller cancels it and deprovisions it after the
 * soak period).
 */
import { Argument, type Command } from 'commander';
import type { TenantStatus } from '../../domain/tenants/types.js';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';
import { config } from '../../lib/config.js';
import { temporalUiLink } from '../../lib/temporal.js';
import { opsRequest } from '../ops-client.js';
import { tenantClientApi } from '../kube-client.js';
import { tenantResource } from '../tenant-output.js';
import { tenantName } from '../arguments.js';

type Answer = { name: string; action: string; status: TenantStatus; workflowId: string; temporalUiUrl: string };

const said = {
  cancel: (a: Answer) =>
    `tenantclient.plana.dev/${a.name} cancelled: deprovisioned at ${a.status.deprovisionAt} unless reactivated`,
  reactivate: (a: Answer) =>
    `tenantclient.plana.dev/${a.name} reactivated: the soak timer is stopped, everything stays`,
};

export function register(program: Command) {
  for (const verb of ['cancel', 'reactivate'] as const) {
    program
      .command(verb)
      .description(
        verb === 'cancel'
          ? 'the customer cancelled: start the soak period, after which the tenant is deprovisioned'
          : 'stop the soak period of a cancelled tenant',
      )
      .argument('<resource>', 'tenant', tenantResource)
      .argument('<name>', 'the tenant name', tenantName)
      .action(async (_resource: string, name: string) => {
        const answer = await opsRequest<Answer>(
          'POST',
          `/api/ops/tenant-clients/${encodeURIComponent(name)}/${verb}`,
          undefined,
          { 'params.name': '<name>' },
        );
        console.log(said[verb](answer));
        console.log(`  workflow ${answer.workflowId}: ${answer.temporalUiUrl}`);
      });
  }

  program
    .command('delete')
    .description(
      'delete a TenantClient (like kubectl delete): it is cancelled, and deprovisioned after the soak period',
    )
    .argument('<resource>', 'tenant', tenantResource)
    .argument('<name>', 'the tenant name', tenantName)
    .action(async (_resource: string, name: string) => {
      await tenantClientApi().delete(name);
      const workflowId = tenantWorkflowId(name);
      console.log(
        `tenantclient.plana.dev/${name} deleted: Ready=False (Deleting) until deprovisioned after the soak period, then it is gone`,
      );
      console.log(`  workflow ${workflowId}: ${temporalUiLink(config(), workflowId)}`);
    });

  program
    .command('retry')
    .description(
      'retry a failed non-fatal step: `retry chat-room <tenant>` creates the chat room on the next reconcile',
    )
    .addArgument(new Argument('<step>', 'the step to retry').choices(['chat-room']))
    .argument('<name>', 'the tenant name', tenantName)
    .action(async (_step: string, name: string) => {
      const answer = await opsRequest<Answer>(
        'POST',
        `/api/ops/tenant-clients/${encodeURIComponent(name)}/retry-chat-room`,
        undefined,
        { 'params.name': '<name>' },
      );
      console.log(`chat room of tenant ${name}: retry requested; \`describe tenant ${name}\` shows the outcome`);
      console.log(`  workflow ${answer.workflowId}: ${answer.temporalUiUrl}`);
    });
}
