/**
 * The consumers of the `rules` switch proof (erp → event-ingestion): every routed tenant's event
 * rules, which the rotation moves itself (rotate-service-key.ts, activity rewriteTenantEventRules):
 * forward to the new key's tokens after the switch and once more before the old key dies, back to
 * the old key's on a roll-back.
 */
import type { Rotation, RotationKeys } from './rotation-run.js';

const failedTenants = (failed: { tenant: string; error: string }[]) =>
  failed.map((f) => `${f.tenant}: ${f.error}`).join('; ');

/** The `rules` proof's consumers: every routed tenant's event rules, moved by the rotation itself. */
export class ConsumerRules {
  /** Tenants a forward rewrite moved, or may have moved in part before it failed (a roll-back must move them back). */
  private moved: string[] = [];

  constructor(
    private readonly rotation: Rotation,
    private readonly keys: RotationKeys,
  ) {}

  private async rewrite(keyId: string, why: string) {
    const { caller, target, activities, status } = this.rotation;
    const r = await activities.tenantRules.rewriteTenantEventRules.executeWithOptions(
      { summary: `${why}: every routed tenant's event rules to ${keyId}'s tokens` },
      [{ caller, target, keyId }],
    );
    status.rules = { keyId, tenants: r.tenants, updated: r.updated.length, failed: r.failed.map((f) => f.tenant) };
    return r;
  }

  /** To the new key's tokens; answers why it failed (tenants not updated), if it did. */
  async forward(why: string): Promise<string | undefined> {
    const r = await this.rewrite(this.keys.newKeyId, why);
    this.moved = [...new Set([...this.moved, ...r.updated, ...r.failed.map((f) => f.tenant)])];
    return r.failed.length
      ? `${r.failed.length} of ${r.tenants} tenants could not be updated (${failedTenants(r.failed)})`
      : undefined;
  }

  /** Back to the old key's tokens; answers what the roll-back's message adds about tenants left on the new one. */
  async back(): Promise<string> {
    const { oldKeyId, newKeyId } = this.keys;
    const r = await this.rewrite(oldKeyId, 'Roll back');
    // a tenant moved to the new key and not moved back gets 401 once it is revoked, until the next
    // reconcile writes its rules (the catch-up sweep publishes its invoices meanwhile)
    const stranded = r.failed.filter((f) => this.moved.includes(f.tenant));
    return stranded.length
      ? `; not moved back to ${oldKeyId} (any rule of theirs on ${newKeyId}'s token gets 401 until their next reconcile): ${failedTenants(stranded)}`
      : '';
  }
}
