/**
 * The support chat room of a tenant (§2.3): `support-<subdomain>-<projectId padded>`. The project
 * id is zero-padded to 6 digits (`support-acme-000042`) so rooms sort by project in the chat's
 * channel list; a longer id is kept whole, never cut. With a subdomain of at most 30 characters
 * the name stays far below Mattermost's 64-character limit for channel names. Pure: the lifecycle
 * workflow names the room it asks for with it.
 */
export const chatRoomName = (subdomain: string, projectId: number): string =>
  `support-${subdomain}-${String(projectId).padStart(6, '0')}`;
