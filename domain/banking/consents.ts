/**
 * The workspaces' PSD2 consents (table banking_consents): one row per consent a workspace asked a
 * bank for. Every query names the workspace, so a consent id of another workspace is simply not
 * found. The bank's Consent-ID is sealed with SECRETS_KEY and opened only to call the bank.
 */
import type pg from 'pg';
import { AppError } from '../../lib/errors.js';
import { open, seal } from '../../lib/secret-box.js';
import type { ConsentRequest, ConsentStatus } from './nextgenpsd2.js';

export interface Consent {
  consentId: string;
  bankId: string;
  status: ConsentStatus;
  access: Record<string, unknown>;
  recurringIndicator: boolean;
  validUntil: string;
  frequencyPerDay: number;
  scaRedirect: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const columns = `id AS "consentId", bank_id AS "bankId", status, access, recurring_indicator AS "recurringIndicator",
  to_char(valid_until, 'YYYY-MM-DD') AS "validUntil", frequency_per_day AS "frequencyPerDay", sca_redirect AS "scaRedirect",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class ConsentStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly secretsKey: string,
  ) {}

  async insert(
    workspaceId: string,
    bankId: string,
    req: ConsentRequest,
    bank: { bankConsentId: string; status: ConsentStatus; scaRedirect: string | null },
  ): Promise<Consent> {
    const { rows } = await this.pool.query<Consent>(
      `INSERT INTO banking_consents (workspace_id, bank_id, bank_consent_sealed, status, access, recurring_indicator, valid_until, frequency_per_day, sca_redirect)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${columns}`,
      [
        workspaceId,
        bankId,
        seal(bank.bankConsentId, this.secretsKey),
        bank.status,
        JSON.stringify(req.access),
        req.recurringIndicator,
        req.validUntil,
        req.frequencyPerDay,
        bank.scaRedirect,
      ],
    );
    return rows[0]!;
  }

  /** The workspace's consent at this bank, with the bank's Consent-ID opened; 404 when it is not the workspace's. */
  async get(workspaceId: string, bankId: string, consentId: string): Promise<Consent & { bankConsentId: string }> {
    const found = UUID.test(consentId)
      ? await this.pool.query<Consent & { sealed: string }>(
          `SELECT ${columns}, bank_consent_sealed AS sealed FROM banking_consents WHERE id = $1 AND workspace_id = $2 AND bank_id = $3`,
          [consentId, workspaceId, bankId],
        )
      : { rows: [] };
    const row = found.rows[0];
    if (!row) throw new AppError('NOT_FOUND', `This workspace has no consent ${consentId} at bank "${bankId}".`);
    const { sealed, ...consent } = row;
    return { ...consent, bankConsentId: open(sealed, this.secretsKey) };
  }

  /**
   * The workspace's consents at this bank that may read (valid, or received: SCA may have been
   * completed since), newest first; 409 naming what to do when there is none.
   */
  async usable(workspaceId: string, bankId: string): Promise<(Consent & { bankConsentId: string })[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `SELECT id FROM banking_consents WHERE workspace_id = $1 AND bank_id = $2 AND status IN ('valid', 'received') AND valid_until >= current_date
       ORDER BY status = 'valid' DESC, created_at DESC LIMIT 5`,
      [workspaceId, bankId],
    );
    return Promise.all(rows.map((r) => this.get(workspaceId, bankId, r.id)));
  }

  static noValidConsent(bankId: string) {
    return new AppError(
      'CONFLICT',
      `This workspace has no valid consent at bank "${bankId}": create one (POST /banking/${bankId}/consent) and complete its SCA.`,
      { bankId },
    );
  }

  async setStatus(consentId: string, status: ConsentStatus, validUntil?: string): Promise<void> {
    await this.pool.query(
      `UPDATE banking_consents SET status = $2, valid_until = COALESCE($3::date, valid_until), updated_at = now() WHERE id = $1 AND (status <> $2 OR valid_until <> COALESCE($3::date, valid_until))`,
      [consentId, status, validUntil ?? null],
    );
  }
}
