/** Odoo domains → SQL: structure, parameters (values never in the SQL text), Odoo's semantics, errors. */
import { describe, expect, it } from 'vitest';
import { SqlBuilder } from '../../sandbox/erp/domain.js';
import { odooModels } from '../../sandbox/erp/models.js';
import { OdooError } from '../../sandbox/erp/odoo-errors.js';

const models = odooModels('18');
const move = models['account.move']!;
const where = (domain: unknown) => {
  const b = new SqlBuilder(models);
  return { sql: b.where(move, domain), params: b.params };
};

describe('domain translation', () => {
  it('AND-s consecutive terms and binds every value as a parameter', () => {
    expect(
      where([
        ['state', '=', 'posted'],
        ['amount_total', '>', 100],
      ]),
    ).toEqual({ sql: 't.state = $1 AND t.amount_total > $2', params: ['posted', 100] });
  });

  it('reads prefix operators: | & !', () => {
    const { sql, params } = where([
      '|',
      ['state', '=', 'draft'],
      '&',
      ['move_type', '=', 'out_invoice'],
      '!',
      ['payment_state', '=', 'paid'],
    ]);
    expect(sql).toBe('(t.state = $1 OR (t.move_type = $2 AND (NOT t.payment_state = $3)))');
    expect(params).toEqual(['draft', 'out_invoice', 'paid']);
  });

  it('keeps hostile values out of the SQL text', () => {
    const { sql, params } = where([['name', 'ilike', "'; DROP TABLE account_move; --"]]);
    expect(sql).toBe('t.name::text ILIKE $1');
    expect(params).toEqual(["%'; DROP TABLE account_move; --%"]);
  });

  it.each([
    [['ref', '=', false], 't.ref IS NULL', []],
    [['ref', '!=', false], 't.ref IS NOT NULL', []],
    [['state', '!=', 'posted'], '(t.state != $1 OR t.state IS NULL)', ['posted']],
    [['state', 'in', ['draft', 'posted']], '(t.state = ANY($1))', [['draft', 'posted']]],
    [['state', 'not in', ['cancel']], '(t.state != ALL($1) OR t.state IS NULL)', [['cancel']]],
    [['partner_id', 'in', [1, false]], '(t.partner_id = ANY($1) OR t.partner_id IS NULL)', [[1]]],
    [['name', '=like', 'INV/%'], 't.name::text LIKE $1', ['INV/%']],
    [['ref', '=?', false], 'TRUE', []],
  ])('translates %j as Odoo does', (leaf, sql, params) => {
    expect(where([leaf])).toEqual({ sql, params });
  });

  it('follows many2one paths with a sub-select', () => {
    expect(where([['partner_id.city', '=', 'Berlin']]).sql).toBe(
      't.partner_id IN (SELECT s1.id FROM res_partner s1 WHERE s1.city = $1)',
    );
  });

  it.each([
    [[['nope', '=', 1]], 'Invalid field account.move.nope'],
    [[['name', 'between', 1]], 'Invalid leaf'],
    [['&', ['name', '=', 'x']], 'missing operand'],
    ['not a domain', 'Invalid domain'],
  ])('rejects %j with a ValueError fault', (domain, message) => {
    let err: unknown;
    try {
      where(domain);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(OdooError);
    expect((err as OdooError).faultCode).toBe(1);
    expect((err as OdooError).faultString).toContain(message);
  });

  it('builds ORDER BY only from known fields', () => {
    const b = new SqlBuilder(models);
    expect(b.orderBy(move, 'invoice_date_due asc, id desc')).toBe('t.invoice_date_due ASC, t.id DESC');
    expect(() => b.orderBy(move, 'id; DROP TABLE x')).toThrow(OdooError);
  });
});
