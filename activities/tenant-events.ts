/** `client.provisioned` through the events service (§6), with a deterministic id so a retry is stored once. */
import { cloudEvent, publishEvent } from '../domain/events/events.js';
import { CLIENT_PROVISIONED, type ClientProvisionedData } from '../domain/tenants/provisioned-event.js';
import type { TenantClientSpec } from '../domain/tenants/types.js';
import { WORKER_CALLER, type PlatformDeps } from './deps.js';

export const provisionedEventId = (tenant: string, generation: number) =>
  `${CLIENT_PROVISIONED}:${tenant}:${generation}`;

export const createTenantEventActivities = ({ config, secrets }: PlatformDeps) => ({
  async publishProvisionedEvent(input: { tenant: string; generation: number; spec: TenantClientSpec }) {
    const id = provisionedEventId(input.tenant, input.generation);
    const data: ClientProvisionedData = {
      tenant: input.tenant,
      workspace: input.tenant,
      projectId: input.spec.projectId,
      ownerEmail: input.spec.ownerEmail,
      ownerName: input.spec.ownerName,
      tier: input.spec.tier,
      erpVersion: input.spec.erpVersion,
    };
    const published = await publishEvent(
      { eventsUrl: config.EVENTS_URL, apiKey: (await secrets.current(WORKER_CALLER, 'events')).key },
      cloudEvent({ id, source: '/plana/tenant-lifecycle', type: CLIENT_PROVISIONED, subject: input.tenant, data }),
    );
    return { eventId: id, ...published };
  },
});
