/**
 * The account API's way to send an e-mail: `POST /v1/email` on the notifications service
 * (§4.6), with the account API's own service key (account-api → notifications, read from the
 * secret store per call) and an Idempotency-Key, so a retried call never sends a second mail.
 */
import { AppError } from '../../lib/errors.js';
import type { SecretStore } from '../service-keys/secret-store.js';

export const ACCOUNT_API_CALLER = 'account-api';

export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
}

export class NotificationsMailClient {
  constructor(
    private readonly notificationsUrl: string,
    private readonly secrets: SecretStore,
    private readonly caller = ACCOUNT_API_CALLER,
  ) {}

  /** Sends `mail` once per `idempotencyKey`; 503 when the service cannot be reached, 502 when it refuses. */
  async send(mail: OutgoingMail, idempotencyKey: string): Promise<{ messageId: string }> {
    const { key } = await this.secrets.current(this.caller, 'notifications');
    let res: Response;
    try {
      res = await fetch(new URL('/v1/email', this.notificationsUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key, 'idempotency-key': idempotencyKey },
        body: JSON.stringify(mail),
        signal: AbortSignal.timeout(15_000),
      });
    } catch {
      throw new AppError(
        'UNAVAILABLE',
        'The notifications service is unavailable, so the e-mail could not be sent; nothing was changed. Retry shortly.',
      );
    }
    const body = (await res.json().catch(() => ({}))) as { messageId?: string };
    if (!res.ok) {
      throw new AppError(
        'BAD_GATEWAY',
        `The notifications service did not send the e-mail (HTTP ${res.status}); nothing was changed. Retry later.`,
      );
    }
    return { messageId: body.messageId ?? '' };
  }
}
