/**
 * The workflows' status mirrors as the controller's passes read them: every pass asks PostgreSQL
 * only for each row's version, and reads again (and parses) only the rows written since the last
 * pass, so a pass over 200 tenants of which a few moved reads a few statuses, not 200.
 */
import type pg from 'pg';
import { readMirroredStatuses, readMirrorVersions, type MirroredTenant } from '../../domain/tenants/tenant-records.js';

export class MirrorReader {
  /** The last row read per TenantClient name, with its version. */
  private known = new Map<string, MirroredTenant>();

  constructor(private readonly pool: pg.Pool) {}

  /** The mirror of each named TenantClient that has a row. */
  async read(names: string[]): Promise<Map<string, MirroredTenant>> {
    const versions = await readMirrorVersions(this.pool, names);
    const changed = [...versions].filter(([name, version]) => this.known.get(name)?.version !== version);
    const fresh = changed.length
      ? await readMirroredStatuses(
          this.pool,
          changed.map(([name]) => name),
        )
      : new Map<string, MirroredTenant>();
    // only the names asked for (and still there) are kept: a deleted row or object is forgotten
    const next = new Map<string, MirroredTenant>();
    for (const name of versions.keys()) {
      const mirror = fresh.get(name) ?? this.known.get(name);
      if (mirror) next.set(name, mirror);
    }
    this.known = next;
    return next;
  }
}
