/** Activities that talk to the notifications service over HTTP (specification §4.6). */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  NotificationErrorType,
  type WelcomeEmailInput,
  type WelcomeEmailResult,
} from '../domain/notifications/workflow-contract.js';

export interface NotificationsDeps {
  notificationsUrl: string;
  /** The worker's current key for the notifications service, read from the secret store per call (cached briefly). */
  notificationsKey: () => Promise<string>;
}

export const createNotificationsActivities = (deps: NotificationsDeps) => ({
  /**
   * POST /v1/welcome. The workflow id is the idempotency key, so a retry after a lost response
   * never sends a second e-mail. A 400 is final (the input will not get better); anything else
   * (down, 5xx, 401 during a key roll-over) is retried by Temporal with backoff.
   */
  async requestWelcomeEmail(input: WelcomeEmailInput): Promise<WelcomeEmailResult> {
    const { workflowExecution, attempt } = Context.current().info;
    const apiKey = await deps.notificationsKey();
    let res: Response;
    try {
      res = await fetch(new URL('/v1/welcome', deps.notificationsUrl), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': apiKey,
          'idempotency-key': workflowExecution?.workflowId ?? `${input.tenant}:welcome`,
        },
        body: JSON.stringify({ email: input.email, workspace: input.workspace }),
        signal: AbortSignal.timeout(15_000),
      });
    } catch (err) {
      throw new Error(`notifications service unreachable (attempt ${attempt}): ${(err as Error).message}`);
    }
    const body = (await res.json().catch(() => ({}))) as { messageId?: string; status?: string; detail?: string };
    if (res.status === 400) {
      throw ApplicationFailure.create({
        type: NotificationErrorType.NotificationRejected,
        message: `notifications service rejected the welcome e-mail: ${body.detail ?? 'bad request'}`,
        nonRetryable: true,
      });
    }
    if (!res.ok) throw new Error(`notifications service answered ${res.status}: ${body.detail ?? ''}`.trim());
    return { messageId: body.messageId ?? '', duplicate: body.status === 'duplicate' };
  },
});
