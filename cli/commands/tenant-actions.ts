/** `cancel|reactivate|delete tenant <name>` and `retry chat-room <name>`: lifecycle actions on the ops API. */
import { Argument, type Command } from 'commander';
import type { TenantStatus } from '../../domain/tenants/types.js';
import { opsRequest } from '../ops-client.js';
import { tenantResource } from '../tenant-output.js';
import { tenantName } from '../arguments.js';

type Answer = { name: string; action: string; status: TenantStatus; workflowId: string; temporalUiUrl: string };

const said = {
  cancel: (a: Answer) =>
    `tenantclient.plana.dev/${a.name} cancelled: deprovisioned at ${a.status.deprovisionAt} unless reactivated`,
  reactivate: (a: Answer) =>
    `tenantclient.plana.dev/${a.name} reactivated: the soak timer is stopped, everything stays`,
  delete: (a: Answer) =>
    `tenantclient.plana.dev/${a.name} deleted: deprovisioning now (route, database, filestore, backup schedule; chat room archived; backups kept)`,
};

export function register(program: Command) {
  for (const verb of ['cancel', 'reactivate', 'delete'] as const) {
    program
      .command(verb)
      .description(
        verb === 'cancel'
          ? 'the customer cancelled: start the soak period, after which the tenant is deprovisioned'
          : verb === 'reactivate'
            ? 'stop the soak period of a cancelled tenant'
            : 'deprovision a cancelled tenant now',
      )
      .argument('<resource>', 'tenant', tenantResource)
      .argument('<name>', 'the tenant name', tenantName)
      .action(async (_resource: string, name: string) => {
        const path = `/api/ops/tenant-clients/${encodeURIComponent(name)}`;
        const answer = await opsRequest<Answer>(
          verb === 'delete' ? 'DELETE' : 'POST',
          verb === 'delete' ? path : `${path}/${verb}`,
        );
        console.log(said[verb](answer));
        console.log(`  workflow ${answer.workflowId}: ${answer.temporalUiUrl}`);
      });
  }

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
      );
      console.log(`chat room of tenant ${name}: retry requested; \`describe tenant ${name}\` shows the outcome`);
      console.log(`  workflow ${answer.workflowId}: ${answer.temporalUiUrl}`);
    });
}
