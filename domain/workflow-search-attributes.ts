/**
 * The custom search attributes the platform's workflows carry, one meaning each (README
 * "Operators: the Temporal UI"). Set by the client at start (domain/<area>/workflow-contract.ts
 * callers) or upserted by the workflow; registered on the Temporal server from this one list
 * (dev server flags in scripts/local-temporal.ts, the worker's start-up in worker/search-attributes.ts).
 * Only @temporalio/common here: workflow code imports it too.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const searchAttributes = {
  /** The tenant (TenantClient name = subdomain). */
  tenant: defineSearchAttributeKey('Tenant', SearchAttributeType.KEYWORD),
  /** The workspace's slug, in every workflow that concerns a workspace (a tenant's workspace has the tenant's name as its slug). */
  workspace: defineSearchAttributeKey('Workspace', SearchAttributeType.KEYWORD),
  /** The workspace's id (UUID), where the workflow works on rows keyed by it (webhook deliveries). */
  workspaceId: defineSearchAttributeKey('WorkspaceId', SearchAttributeType.KEYWORD),
  tier: defineSearchAttributeKey('Tier', SearchAttributeType.KEYWORD),
  erpVersion: defineSearchAttributeKey('ErpVersion', SearchAttributeType.KEYWORD),
  /** The step the workflow is at (`queued` until its first task). */
  currentStep: defineSearchAttributeKey('CurrentStep', SearchAttributeType.KEYWORD),
  webhookEndpoint: defineSearchAttributeKey('WebhookEndpoint', SearchAttributeType.KEYWORD),
} as const;

/** `Name=Type` pairs for `temporal server start-dev --search-attribute` and `operator search-attribute create`. */
export const searchAttributeRegistrations: string[] = Object.values(searchAttributes).map((k) => `${k.name}=Keyword`);
