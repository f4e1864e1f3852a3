/**
 * An application fault of real Odoo carries a Python traceback; the message a tenant's status shows
 * (describe tenant, Synced/Ready) is its exception, not the last line of the text (for a SQL error
 * that was PostgreSQL's `^` position marker, so the status said "does not answer: ^").
 */
import { describe, expect, it } from 'vitest';
import { ErpFault } from '../../domain/erp/client.js';

// as Odoo 18 answered `authenticate` on a database that is not an Odoo database (chained exceptions, trimmed)
const registryTraceback = `Traceback (most recent call last):
  File "/work/odoo-src/odoo/modules/registry.py", line 104, in __new__
    return cls.registries[db_name]
           ~~~~~~~~~~~~~~^^^^^^^^^
KeyError: 'demo.erp.plana.test'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/work/odoo-src/odoo/modules/graph.py", line 50, in update_from_db
    cr.execute('SELECT name, id, state, demo AS dbdemo, latest_version AS installed_version'
  File "/work/odoo-src/odoo/sql_db.py", line 354, in execute
    res = self._obj.execute(query, params)
          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
psycopg2.errors.UndefinedColumn: column "demo" does not exist
LINE 1: SELECT name, id, state, demo AS dbdemo, latest_version AS in...
                                ^
`;

describe('ErpFault', () => {
  it('says the exception of the last traceback, without the SQL position marker', () => {
    expect(new ErpFault(1, registryTraceback).message).toBe(
      'psycopg2.errors.UndefinedColumn: column "demo" does not exist LINE 1: SELECT name, id, state, demo AS dbdemo, latest_version AS in...',
    );
  });

  it('keeps a fault string that is the exception itself, and the message of a user error as it is', () => {
    expect(
      new ErpFault(1, 'psycopg2.errors.UndefinedColumn: column "demo" does not exist\nLINE 1: SELECT demo\n       ^\n')
        .message,
    ).toBe('psycopg2.errors.UndefinedColumn: column "demo" does not exist LINE 1: SELECT demo');
    expect(
      new ErpFault(
        1,
        'Traceback (most recent call last):\n  File "x.py", line 1, in f\nValueError: Invalid field account.move.nope\n',
      ).message,
    ).toBe('ValueError: Invalid field account.move.nope');
    expect(new ErpFault(2, 'You cannot post an empty invoice.').message).toBe('You cannot post an empty invoice.');
  });
});
