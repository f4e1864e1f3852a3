/**
 * The platform's daily retention jobs, each a Temporal schedule of its own domain that runs the one
 * retention workflow (workflows/apply-retention.ts) with what it prunes.
 */
export const APPLY_RETENTION_WORKFLOW = 'applyRetention';

/** What a retention run prunes: execution-log partitions, expired backups, or old webhook history. */
export type RetentionKind = 'execution-log' | 'backups' | 'webhook-history';

export type ApplyRetentionWorkflow = (kind: RetentionKind) => Promise<unknown>;
