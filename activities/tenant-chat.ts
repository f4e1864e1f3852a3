/** The tenant's support chat room `support-<subdomain>-<projectId padded>` (Mattermost channels API). */
import { chatRoomName } from '../domain/tenants/chat-room.js';
import type { TenantClientSpec } from '../domain/tenants/types.js';
import type { PlatformDeps } from './deps.js';

export const createTenantChatActivities = ({ chat }: PlatformDeps) => ({
  async ensureChatRoom(input: { spec: TenantClientSpec }) {
    const room = chatRoomName(input.spec.subdomain, input.spec.projectId);
    const result = await chat.ensureChannel({
      name: room,
      displayName: `Support ${input.spec.subdomain} (project ${input.spec.projectId})`,
      purpose: `Support for tenant ${input.spec.subdomain}, tier ${input.spec.tier}, owner ${input.spec.ownerName}`,
    });
    return { room, ...result };
  },

  /** Marks the room inactive (archived, kept readable) when the tenant is deprovisioned. */
  async archiveChatRoom(input: { spec: TenantClientSpec }) {
    const room = chatRoomName(input.spec.subdomain, input.spec.projectId);
    return { room, outcome: await chat.archiveChannel(room) };
  },
});
