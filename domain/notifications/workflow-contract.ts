/**
 * The welcome e-mail workflow as its starters and its activities see it: type name, id, input
 * and result (the implementation: workflows/send-welcome-email.ts). No Node built-ins: bundled
 * into the workflow sandbox too.
 */

/** The workflow type `sendWelcomeEmail` is registered under. */
export const WELCOME_EMAIL_WORKFLOW = 'sendWelcomeEmail';

export const welcomeWorkflowId = (tenant: string, n: number) => `welcome:${tenant}:${n}`;

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

/** The signature the workflow implements (checked in workflows/index.ts); typed starts use it. */
export type SendWelcomeEmailWorkflow = (input: WelcomeEmailInput) => Promise<WelcomeEmailResult>;

/** Business failures of the notifications activities that are not worth retrying. */
export const NotificationErrorType = {
  NotificationRejected: 'NotificationRejected',
} as const;
