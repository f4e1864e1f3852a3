/** The rules behind a TenantClient's status: Crossplane-style conditions, unready resources, filestore paths, backup retention. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { filestorePath } from '../../domain/tenants/filestore.js';
import { retentionDays, tenantBackupDir } from '../../domain/tenants/backups.js';
import { parseConfig } from '../../lib/config.js';
import { age } from '../../cli/table.js';
import {
  newResources,
  resourceErrors,
  setCondition,
  unreadyMessage,
  type Condition,
} from '../../domain/tenants/types.js';

describe('conditions', () => {
  const synced = (status: 'True' | 'False'): Omit<Condition, 'lastTransitionTime'> => ({
    type: 'Synced',
    status,
    reason: status === 'True' ? 'ReconcileSuccess' : 'ReconcileError',
    message: '',
    observedGeneration: 1,
  });

  it('keeps lastTransitionTime while the status stays, and moves it when the status changes', () => {
    let conditions = setCondition([], synced('False'), 't1');
    conditions = setCondition(conditions, { ...synced('False'), message: 'still failing' }, 't2');
    expect(conditions).toEqual([{ ...synced('False'), message: 'still failing', lastTransitionTime: 't1' }]);
    conditions = setCondition(conditions, synced('True'), 't3');
    expect(conditions[0]!.lastTransitionTime).toBe('t3');
  });

  it('lists Synced before Ready', () => {
    const ready: Omit<Condition, 'lastTransitionTime'> = {
      type: 'Ready',
      status: 'False',
      reason: 'Creating',
      message: '',
      observedGeneration: 1,
    };
    expect(setCondition(setCondition([], ready, 't'), synced('True'), 't').map((c) => c.type)).toEqual([
      'Synced',
      'Ready',
    ]);
  });

  it('names the unready resources but never the non-fatal chat room', () => {
    const resources = newResources('t');
    expect(unreadyMessage(resources)).toBe('Unready resources: database, apiUser, route, filestore, backupSchedule');
    for (const k of ['database', 'apiUser', 'route', 'filestore', 'backupSchedule'] as const)
      resources[k] = { ...resources[k], synced: 'True', state: 'Created' };
    resources.chatRoom = {
      ...resources.chatRoom,
      synced: 'False',
      state: 'Failed',
      message: 'chat server unreachable',
    };
    expect(unreadyMessage(resources)).toBe('');
    expect(resourceErrors(resources)).toEqual(['chatRoom: chat server unreachable']);
  });
});

describe('filestore paths', () => {
  it('puts each tenant directly under the root', () => {
    expect(filestorePath('/srv/filestore', 'acme')).toBe('/srv/filestore/acme');
    expect(filestorePath('rel/root', 'a-1')).toBe(path.resolve('rel/root', 'a-1'));
  });
  it.each(['..', '../etc', 'a/b', '/etc', '', 'Acme', '.'])(
    'refuses %j (outside the root or not a tenant)',
    (tenant) => {
      expect(() => filestorePath('/srv/filestore', tenant)).toThrow(/refusing/);
    },
  );
  it('keeps backups in a folder per tenant under the backup root', () => {
    expect(tenantBackupDir('/srv/backups', 'acme')).toBe('/srv/backups/acme');
    expect(() => tenantBackupDir('/srv/backups', '../x')).toThrow(/refusing/);
  });
});

describe('backup retention per tier', () => {
  it('is 30 days for starter, 90 for pro, 365 for enterprise by default, and configurable', () => {
    const cfg = parseConfig({});
    expect([retentionDays(cfg, 'starter'), retentionDays(cfg, 'pro'), retentionDays(cfg, 'enterprise')]).toEqual([
      30, 90, 365,
    ]);
    expect(retentionDays(parseConfig({ BACKUP_RETENTION_ENTERPRISE_DAYS: '730' }), 'enterprise')).toBe(730);
  });
  it('reads lifecycle durations such as "30 days" and refuses others with a clear message', () => {
    const cfg = parseConfig({});
    expect(cfg.TENANT_SOAK_PERIOD).toBe(30 * 86_400_000);
    expect(cfg.TENANT_READY_DEADLINE).toBe(5 * 60_000);
    expect(parseConfig({ TENANT_READY_DEADLINE: '3s' }).TENANT_READY_DEADLINE).toBe(3_000);
    expect(() => parseConfig({ TENANT_SOAK_PERIOD: 'a month' })).toThrow(
      'TENANT_SOAK_PERIOD: must be a duration such as "30 days", "5 minutes" or "2s"',
    );
  });
});

describe('kubectl-style AGE', () => {
  it.each([
    [5_000, '5s'],
    [119_000, '119s'],
    [600_000, '10m'],
    [3 * 3_600_000, '3h'],
    [5 * 86_400_000, '5d'],
  ])('%i ms → %s', (ms, expected) => {
    expect(age(new Date(1_000_000_000_000 - ms).toISOString(), 1_000_000_000_000)).toBe(expected);
  });
});
