/** ERP user passwords in Odoo's stored format (passlib pbkdf2_sha512). */
import { pbkdf2Sync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hashOdooPassword, verifyOdooPassword } from '../../domain/erp/odoo-password.js';

describe('Odoo password hashes', () => {
  it('are salted pbkdf2-sha512 in passlib format and verify only the right password', async () => {
    const hash = hashOdooPassword('correct horse', 1000);
    expect(hash).toMatch(/^\$pbkdf2-sha512\$1000\$[A-Za-z0-9./]+\$[A-Za-z0-9./]+$/);
    expect(hashOdooPassword('correct horse', 1000)).not.toBe(hash);
    expect(await verifyOdooPassword('correct horse', hash)).toBe(true);
    expect(await verifyOdooPassword('correct horsf', hash)).toBe(false);
  });

  it('verify a hash computed independently the way passlib does', async () => {
    const salt = Buffer.from('0123456789abcdef');
    const ab64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '').replace(/\+/g, '.');
    const checksum = pbkdf2Sync('s3cret', salt, 2000, 64, 'sha512');
    expect(await verifyOdooPassword('s3cret', `$pbkdf2-sha512$2000$${ab64(salt)}$${ab64(checksum)}`)).toBe(true);
  });

  it.each([null, '', 'plaintext', '$pbkdf2-sha256$1000$abc$def', '$pbkdf2-sha512$notanumber$abc$def'])(
    'reject a stored value %j that is not a hash',
    async (stored) => {
      expect(await verifyOdooPassword('plaintext', stored)).toBe(false);
    },
  );
});
