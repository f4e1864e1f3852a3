/** The TenantClient resource: parsing and validation (§2.3), one clear message per problem. */
import { describe, expect, it } from 'vitest';
import { parseTenantClient, sameSpec, validateTenantClient } from '../../domain/tenants/tenant-client.js';

const yaml = (spec: string, name = 'acme') => `apiVersion: plana.dev/v1alpha1
kind: TenantClient
metadata:
  name: ${name}
spec:
${spec}`;

const good = `  subdomain: acme
  projectId: 42
  tier: pro
  ownerEmail: ada@acme.test
  ownerName: Ada Lovelace
`;

describe('parseTenantClient', () => {
  it('reads a YAML resource and defaults erpVersion to "18"', () => {
    const parsed = parseTenantClient(yaml(good));
    expect(parsed).toEqual({
      ok: true,
      value: {
        apiVersion: 'plana.dev/v1alpha1',
        kind: 'TenantClient',
        metadata: { name: 'acme' },
        spec: {
          subdomain: 'acme',
          projectId: 42,
          tier: 'pro',
          erpVersion: '18',
          ownerEmail: 'ada@acme.test',
          ownerName: 'Ada Lovelace',
        },
      },
    });
  });

  it('reads the same resource as JSON, and refuses an unquoted YAML erpVersion as the API server does', () => {
    const json = JSON.stringify({
      apiVersion: 'plana.dev/v1alpha1',
      kind: 'TenantClient',
      metadata: { name: 'legacy' },
      spec: {
        subdomain: 'legacy',
        projectId: 1,
        tier: 'starter',
        erpVersion: '17',
        ownerEmail: 'o@l.test',
        ownerName: 'O',
      },
    });
    expect(parseTenantClient(json)).toMatchObject({ ok: true, value: { spec: { erpVersion: '17' } } });
    expect(parseTenantClient(yaml(`${good}  erpVersion: 19\n`))).toEqual({
      ok: false,
      problems: [
        {
          field: 'spec.erpVersion',
          message: 'must be a string: quote it ("19"); one of "17", "18" (default), "19"',
        },
      ],
    });
  });

  it('refuses control characters in the owner fields (PostgreSQL cannot store U+0000)', () => {
    const doc = (ownerName: string, ownerEmail = 'o@l.test') => ({
      apiVersion: 'plana.dev/v1alpha1',
      kind: 'TenantClient',
      metadata: { name: 'ctl' },
      spec: { subdomain: 'ctl', projectId: 1, tier: 'starter', erpVersion: '18', ownerEmail, ownerName },
    });
    expect(validateTenantClient(doc('A\u0000B'))).toEqual({
      ok: false,
      problems: [{ field: 'spec.ownerName', message: 'must not contain control characters' }],
    });
    expect(validateTenantClient(doc('Ada', 'a\u001b@l.test'))).toMatchObject({
      ok: false,
      problems: [{ field: 'spec.ownerEmail', message: 'must not contain control characters' }],
    });
    expect(validateTenantClient(doc('Zoë Ünal-Ørsted')).ok).toBe(true);
  });

  it('accepts a 30-character subdomain with digits and hyphens', () => {
    const name = `${'a1-'.repeat(9)}a12`;
    expect(name).toHaveLength(30);
    expect(parseTenantClient(yaml(good.replace('subdomain: acme', `subdomain: ${name}`), name)).ok).toBe(true);
  });

  it('says which document is broken', () => {
    expect(parseTenantClient('spec: [')).toMatchObject({ ok: false, problems: [{ field: '(document)' }] });
    expect(parseTenantClient('- just\n- a list\n')).toEqual({
      ok: false,
      problems: [
        { field: '(document)', message: 'must be a TenantClient mapping with apiVersion, kind, metadata and spec' },
      ],
    });
  });
});

describe('validateTenantClient: one message per problem', () => {
  const problemsOf = (text: string, name?: string) => {
    const r = parseTenantClient(yaml(text, name));
    return r.ok ? [] : r.problems.map((p) => `${p.field} ${p.message}`);
  };

  it.each([
    [
      'subdomain with an underscore',
      good.replace('subdomain: acme', 'subdomain: ac_me'),
      'acme',
      ['spec.subdomain must match [a-z0-9-]+ (lowercase letters, digits and hyphens only)'],
    ],
    [
      'subdomain of 31 characters',
      good.replace('subdomain: acme', `subdomain: ${'a'.repeat(31)}`),
      'acme',
      ['spec.subdomain must be at most 30 characters'],
    ],
    [
      'subdomain other than the name',
      good.replace('subdomain: acme', 'subdomain: other'),
      'acme',
      ['spec.subdomain must equal metadata.name ("acme")'],
    ],
    [
      'name with capitals',
      good,
      'Acme',
      ['metadata.name must match [a-z0-9-]+ (lowercase letters, digits and hyphens only)'],
    ],
    // RFC 1123 labels: the name is a subdomain, a database name and a route host
    [
      'name starting with a hyphen',
      good.replace('subdomain: acme', 'subdomain: -bad'),
      '-bad',
      [
        'metadata.name must be a DNS label: it cannot start or end with a hyphen',
        'spec.subdomain must be a DNS label: it cannot start or end with a hyphen',
      ],
    ],
    [
      'name ending with a hyphen',
      good.replace('subdomain: acme', 'subdomain: bad-'),
      'bad-',
      [
        'metadata.name must be a DNS label: it cannot start or end with a hyphen',
        'spec.subdomain must be a DNS label: it cannot start or end with a hyphen',
      ],
    ],
    [
      'a single hyphen',
      good.replace('subdomain: acme', 'subdomain: "-"'),
      '"-"',
      [
        'metadata.name must be a DNS label: it cannot start or end with a hyphen',
        'spec.subdomain must be a DNS label: it cannot start or end with a hyphen',
      ],
    ],
    ['missing subdomain', good.replace('  subdomain: acme\n', ''), 'acme', ['spec.subdomain is required (a string)']],
    [
      'fractional projectId',
      good.replace('projectId: 42', 'projectId: 4.5'),
      'acme',
      ['spec.projectId must be an integer'],
    ],
    [
      'projectId as text',
      good.replace('projectId: 42', 'projectId: "42"'),
      'acme',
      ['spec.projectId must be an integer'],
    ],
    ['missing projectId', good.replace('  projectId: 42\n', ''), 'acme', ['spec.projectId is required (an integer)']],
    [
      'unknown tier',
      good.replace('tier: pro', 'tier: platinum'),
      'acme',
      ['spec.tier must be one of starter, pro, enterprise'],
    ],
    [
      'ERP version 16',
      `${good}  erpVersion: "16"\n`,
      'acme',
      ['spec.erpVersion must be one of "17", "18" (default), "19"'],
    ],
    [
      'bad e-mail',
      good.replace('ada@acme.test', 'ada-at-acme'),
      'acme',
      ['spec.ownerEmail must be an e-mail address such as owner@example.com'],
    ],
    ['empty owner name', good.replace('Ada Lovelace', '""'), 'acme', ['spec.ownerName must not be empty']],
    ['blank owner name', good.replace('Ada Lovelace', '"   "'), 'acme', ['spec.ownerName must not be blank']],
    [
      'e-mail with spaces around it',
      good.replace('ada@acme.test', '" ada@acme.test"'),
      'acme',
      ['spec.ownerEmail must be an e-mail address such as owner@example.com'],
    ],
    [
      'projectId over 32 bits',
      good.replace('projectId: 42', 'projectId: 2147483648'),
      'acme',
      ['spec.projectId must be at most 2147483647'],
    ],
    ['unknown spec fields', `${good}  size: large\n  region: eu\n`, 'acme', ['spec has unknown fields: size, region']],
  ])('%s', (_label, spec, name, expected) => {
    expect(problemsOf(spec, name)).toEqual(expected);
  });

  it('reports every problem of a resource at once', () => {
    const r = validateTenantClient({
      apiVersion: 'v1',
      kind: 'Tenant',
      metadata: { name: 'x' },
      spec: { subdomain: 'x', projectId: 'a', tier: 'gold', ownerEmail: 'x@y.z', ownerName: 'X' },
    });
    expect(r.ok ? [] : r.problems.map((p) => p.field)).toEqual(['apiVersion', 'kind', 'spec.projectId', 'spec.tier']);
  });

  it('says what is missing from an empty document', () => {
    const r = validateTenantClient({});
    expect(r.ok ? [] : r.problems).toEqual([
      { field: 'apiVersion', message: 'must be "plana.dev/v1alpha1"' },
      { field: 'kind', message: 'must be "TenantClient"' },
      { field: 'metadata', message: 'is required (a mapping with name)' },
      {
        field: 'spec',
        message: 'is required (a mapping with subdomain, projectId, tier, erpVersion, ownerEmail, ownerName)',
      },
    ]);
  });
});

describe('hostile documents are refused as documents, cheaply', () => {
  const doc = (r: ReturnType<typeof parseTenantClient>) =>
    r.ok ? [] : r.problems.map((p) => `${p.field} ${p.message}`);

  it('a "billion laughs" of nested aliases', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 9; i++) {
      const [prev, cur] = [String.fromCharCode(96 + i), String.fromCharCode(97 + i)];
      levels.push(`${cur}: &${cur} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const bomb = `${yaml(good.replace('Ada Lovelace', '*i'))}x:\n${levels.map((l) => `  ${l}`).join('\n')}\n`;
    expect(doc(parseTenantClient(bomb))).toEqual(['(document) uses YAML aliases too much (at most 20 expansions)']);
  });

  it('deep nesting, within and beyond what the parser survives', () => {
    expect(doc(parseTenantClient(`a: ${'['.repeat(40)}${']'.repeat(40)}`))).toEqual([
      '(document) nests deeper than 16 levels',
    ]);
    expect(doc(parseTenantClient(`a: ${'['.repeat(20_000)}${']'.repeat(20_000)}`))).toEqual([
      '(document) is not valid YAML or JSON: it nests too deeply',
    ]);
  });

  it('a document over 64 KiB, and duplicate keys', () => {
    expect(doc(parseTenantClient(`${yaml(good)}# ${'x'.repeat(70_000)}\n`))).toEqual([
      '(document) is larger than 64 KiB',
    ]);
    expect(doc(parseTenantClient(`${yaml(good)}kind: TenantClient\n`))).toEqual([
      expect.stringMatching(/^\(document\) is not valid YAML or JSON: .*unique/i),
    ]);
  });
});

describe('spec changes', () => {
  const spec = {
    subdomain: 'acme',
    projectId: 42,
    tier: 'pro',
    erpVersion: '18',
    ownerEmail: 'a@acme.test',
    ownerName: 'Ada',
  } as const;
  it('the same spec is the same, whatever the key order', () => {
    expect(
      sameSpec(spec, {
        ownerName: 'Ada',
        ownerEmail: 'a@acme.test',
        erpVersion: '18',
        tier: 'pro',
        projectId: 42,
        subdomain: 'acme',
      }),
    ).toBe(true);
    expect(sameSpec(spec, { ...spec, tier: 'enterprise' })).toBe(false);
  });
});
