/**
 * What workers, clients and tests share about the workflows: the task queue default, the
 * custom search attributes (registered on the Temporal server at start-up), and message types.
 * No Node built-ins here: this module is bundled into the workflow sandbox.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const searchAttributes = {
  tenant: defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD),
  workspace: defineSearchAttributeKey('Workspace', SearchAttributeType.KEYWORD),
  tier: defineSearchAttributeKey('Tier', SearchAttributeType.KEYWORD),
  erpVersion: defineSearchAttributeKey('ErpVersion', SearchAttributeType.KEYWORD),
  currentStep: defineSearchAttributeKey('CurrentStep', SearchAttributeType.KEYWORD),
} as const;

/** `Name=Type` pairs for `temporal server start-dev --search-attribute` and `operator search-attribute create`. */
export const searchAttributeRegistrations: string[] = Object.values(searchAttributes).map(
  (k) => `${k.name}=Keyword`,
);

export interface WelcomeEmailInput {
  /** TenantClient name (= subdomain). */
  tenant: string;
  /** Recipient: the tenant owner's e-mail. */
  email: string;
  /** Workspace slug shown in the e-mail. */
  workspace: string;
}

export interface WelcomeEmailResult {
  /** Message id the notifications service assigned (or the one it sent before, for a repeat). */
  messageId: string;
  /** True when the notifications service had already sent this e-mail (idempotent repeat). */
  duplicate: boolean;
}

export const welcomeWorkflowId = (tenant: string, n: number) => `welcome:${tenant}:${n}`;

/**
 * The support chat room of a tenant (§2.3): `support-<subdomain>-<projectId padded>`. The project
 * id is zero-padded to 6 digits (`support-acme-000042`) so rooms sort by project in the chat's
 * channel list; a longer id is kept whole, never cut. With a subdomain of at most 30 characters
 * the name stays far below Mattermost's 64-character limit for channel names.
 */
export const chatRoomName = (subdomain: string, projectId: number): string =>
  `support-${subdomain}-${String(projectId).padStart(6, '0')}`;

/** CloudEvent type emitted once a tenant is Ready (§3.2, §6). */
export const CLIENT_PROVISIONED = 'client.provisioned';

/** The `data` of a `client.provisioned` CloudEvent. */
export interface ClientProvisionedData {
  /** TenantClient name (= subdomain). */
  tenant: string;
  /** Display name of the workspace entry; defaults to the tenant name. */
  workspace?: string;
  projectId?: number;
  ownerEmail: string;
  ownerName: string;
  tier: 'starter' | 'pro' | 'enterprise';
  erpVersion: '17' | '18' | '19';
}

/** Business failures that are not worth retrying. */
export const ErrorType = {
  NotificationRejected: 'NotificationRejected',
} as const;
