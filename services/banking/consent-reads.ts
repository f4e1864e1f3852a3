/**
 * The consents a banking read goes through: the bank's adapter, the workspace's consent (the one
 * named, or its newest valid one at the bank), and a consent the bank calls expired marked expired
 * here too.
 */
import { AppError } from '../../lib/errors.js';
import { ConsentStore } from '../../domain/banking/consents.js';
import type { BankAdapter } from '../../domain/banking/nextgenpsd2.js';

export class ConsentReads {
  constructor(
    readonly consents: ConsentStore,
    private readonly adapters: Map<string, BankAdapter>,
  ) {}

  /** The bank's adapter (404 naming the banks there are when there is none). */
  adapter(bankId: string): BankAdapter {
    const found = this.adapters.get(bankId);
    if (!found) {
      // the banks by id, not a path of this service (its caller's path differs: /api/banking/adapters)
      const known = [...this.adapters.keys()];
      const banks =
        known.length <= 12
          ? known.map((id) => `"${id}"`).join(', ')
          : `${known
              .slice(0, 3)
              .map((id) => `"${id}"`)
              .join(', ')} and ${known.length - 3} more (the adapters list has them all)`;
      throw new AppError('NOT_FOUND', `There is no bank "${bankId}" here; the banks are ${banks}.`, { bankId });
    }
    return found;
  }

  /** Runs a bank read under the consent named, or the workspace's newest valid one at the bank. */
  async withConsent<T>(
    workspaceId: string,
    bankId: string,
    consentId: string | undefined,
    read: (bank: BankAdapter, bankConsentId: string) => Promise<T>,
  ): Promise<T> {
    const bank = this.adapter(bankId);
    const consent = consentId
      ? await this.consents.get(workspaceId, bankId, consentId)
      : await this.newestValid(bank, workspaceId);
    try {
      return await read(bank, consent.bankConsentId);
    } catch (err) {
      if (err instanceof AppError && err.extra.bankCode === 'CONSENT_EXPIRED')
        await this.consents.setStatus(consent.consentId, 'expired');
      throw err;
    }
  }

  /** The workspace's newest valid consent at the bank (a received one is asked about: its SCA may be done). */
  private async newestValid(bank: BankAdapter, workspaceId: string) {
    for (const consent of await this.consents.usable(workspaceId, bank.id)) {
      if (consent.status === 'valid') return consent;
      const now = await bank.consentStatus(consent.bankConsentId);
      if (now.status !== consent.status) await this.consents.setStatus(consent.consentId, now.status, now.validUntil);
      if (now.status === 'valid') return consent;
    }
    throw ConsentStore.noValidConsent(bank.id);
  }
}
