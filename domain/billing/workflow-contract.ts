/**
 * The dunning workflow as its starters see it (the implementation: workflows/dun-workspace.ts):
 * type name, id, input, outcome and messages. One run per run of failed payments of a workspace.
 * @temporalio/workflow's define* only name the messages (safe in client code); no Node built-ins:
 * bundled into the workflow sandbox too.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';

/** The workflow type `dunWorkspace` is registered under. */
export const DUNNING_WORKFLOW = 'dunWorkspace';

/** One workflow per run of failed payments of a workspace: `dunning:<workspace>:<n>`. */
export const dunningWorkflowId = (workspace: string, n: number) => `dunning:${workspace}:${n}`;

export interface DunningInput {
  workspaceId: string;
  /** The workspace's slug (for the e-mails and the search attribute). */
  workspace: string;
  /** Which run of failed payments of the workspace this is (subscriptions.dunning_count). */
  run: number;
  /** When this run of failed payments began (subscriptions.past_due_since, ISO). */
  pastDueSince: string;
  /** The invoice whose payment failed first. */
  invoiceId: string;
  /** How long the workspace may pay before it is suspended (BILLING_GRACE_PERIOD). */
  graceMs: number;
}

export type DunningOutcome = 'paid-within-grace' | 'paid-after-suspension' | 'cancelled' | 'settled-before-suspension';

/** The signature the workflow implements (checked in workflows/index.ts); typed starts use it. */
export type DunWorkspaceWorkflow = (input: DunningInput) => Promise<DunningOutcome>;

/** The payment came in (invoice.paid) or the subscription ended: the dunning run is over. */
export const dunningSettledSignal = defineSignal<[{ reason: 'paid' | 'cancelled' }]>('settled');

export interface DunningStatus {
  step: 'notified' | 'in-grace' | 'suspended' | 'settled';
  suspendAt: string;
}
export const dunningStatusQuery = defineQuery<DunningStatus>('status');
