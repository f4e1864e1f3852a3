/**
 * The TenantClient CRD on the real API server: the example applies, the API server itself refuses
 * what the zod schema refuses with the zod schema's message, and accepts what it accepts (the two
 * are kept in step by the table below), erpVersion defaults to "18", and the printer columns and
 * the status subresource are there.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { parse } from 'yaml';
import { kubectl } from '../../../scripts/local-servers.js';
import { NAME_MESSAGES, validateTenantClient } from '../../../domain/tenants/tenant-client.js';

const run = (args: string[], input?: string) => {
  try {
    return { ok: true, out: kubectl(inject('kubeconfigPath'), args, input) };
  } catch (err) {
    return { ok: false, out: String((err as { stderr?: string }).stderr) };
  }
};

const resource = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'plana.dev/v1alpha1',
  kind: 'TenantClient',
  metadata: { name },
  spec: {
    subdomain: name,
    projectId: 7,
    tier: 'pro',
    erpVersion: '18',
    ownerEmail: 'ada@example.test',
    ownerName: 'Ada',
    ...spec,
  },
});

describe('the TenantClient CRD', () => {
  it('takes the example with kubectl apply and shows it with the printer columns', () => {
    const example = parse(readFileSync('examples/tenant-acme.yaml', 'utf8')) as { metadata: { name: string } };
    const name = `crd-${Math.random().toString(36).slice(2, 8)}`;
    const text = JSON.stringify({ ...example, metadata: { name }, spec: { ...resource(name, {}).spec } });
    expect(run(['apply', '-f', '-'], text).out).toContain(`tenantclient.plana.dev/${name} created`);
    const table = run(['get', 'tc', name]).out.split('\n')[0];
    expect(table?.split(/\s+/).filter(Boolean)).toEqual(['NAME', 'SYNCED', 'READY', 'TIER', 'VERSION', 'AGE']);
    // the status is written through its own subresource
    const patch = JSON.stringify({ status: { phase: 'Provisioning' } });
    expect(run(['patch', 'tc', name, '--subresource=status', '--type=merge', '-p', patch]).ok).toBe(true);
    expect(run(['get', 'tc', name, '-o', 'jsonpath={.status.phase}']).out).toBe('Provisioning');
    run(['delete', 'tc', name, '--wait=false']);
  });

  it('refuses subdomain BAD_X with the schema message', () => {
    const bad = resource('bad-x', { subdomain: 'BAD_X' });
    const answer = run(['apply', '--dry-run=server', '-f', '-'], JSON.stringify(bad));
    expect(answer.ok).toBe(false);
    expect(answer.out).toContain(
      'spec.subdomain: Invalid value: "string": must match [a-z0-9-]+ (lowercase letters, digits and hyphens only)',
    );
    const zod = validateTenantClient(bad);
    expect(zod.ok).toBe(false);
    if (!zod.ok) expect(answer.out).toContain(zod.problems[0]!.message);
  });

  it('defaults erpVersion to "18"', () => {
    const { erpVersion: _omitted, ...spec } = resource('defaults', {}).spec;
    const answer = run(
      ['apply', '--dry-run=server', '-o', 'jsonpath={.spec.erpVersion}', '-f', '-'],
      JSON.stringify({ ...resource('defaults', {}), spec }),
    );
    expect(answer.out).toBe('18');
  });

  // each case: what the API server answers agrees with the zod schema (accepted, or refused with its message)
  const cases: [string, ReturnType<typeof resource>][] = [
    ['valid', resource('ok-name', {})],
    ['30 characters', resource('a'.repeat(30), {})],
    ['31 characters', resource('a'.repeat(31), {})],
    ['leading hyphen', resource('-lead', {})],
    ['trailing hyphen', resource('trail-', {})],
    ['subdomain other than the name', resource('one', { subdomain: 'two' })],
    ['unknown tier', resource('tier', { tier: 'gold' })],
    ['ERP 16', resource('erp', { erpVersion: '16' })],
    ['ERP 19', resource('erp', { erpVersion: '19' })],
    ['projectId not an integer', resource('pid', { projectId: 1.5 })],
    ['projectId negative', resource('pid', { projectId: -1 })],
    ['projectId a string', resource('pid', { projectId: '42' })],
    ['owner e-mail missing', resource('mail', { ownerEmail: undefined })],
    ['owner e-mail invalid', resource('mail', { ownerEmail: 'not-an-address' })],
    ['owner name missing', resource('owner', { ownerName: undefined })],
    ['owner name blank', resource('owner', { ownerName: '   ' })],
    ['owner name with U+0000', resource('owner', { ownerName: 'A\u0000B' })],
    ['owner name with an escape character', resource('owner', { ownerName: 'A\u001b[31mB' })],
    ['owner e-mail with a line feed', resource('mail', { ownerEmail: 'a@b.test\nBcc: c@d.test' })],
    ['owner name with accents', resource('owner', { ownerName: 'Zoë Ørsted' })],
    ['ERP version unquoted', resource('erp', { erpVersion: 18 })],
  ];
  it.each(cases)('agrees with the zod schema: %s', (_label, doc) => {
    const zod = validateTenantClient(doc);
    const answer = run(['apply', '--dry-run=server', '-f', '-'], JSON.stringify(doc));
    expect(answer.ok, answer.out).toBe(zod.ok);
    if (!zod.ok) {
      const field = zod.problems[0]!.field;
      const message = zod.problems[0]!.message.replace(/ \(.*\)$/, '');
      // required fields: the API server words "Required"; the rest: the same message
      if (/is required/.test(zod.problems[0]!.message)) expect(answer.out).toContain(`${field}: Required`);
      else if (field === 'spec.tier') expect(answer.out).toContain('spec.tier: Unsupported value: "gold"');
      else if (field === 'spec.erpVersion' && typeof doc.spec.erpVersion === 'number')
        expect(answer.out).toContain('spec.erpVersion: Invalid value: "integer"');
      else if (field === 'spec.erpVersion') expect(answer.out).toContain('spec.erpVersion: Unsupported value: "16"');
      else if (field === 'spec.projectId') expect(answer.out).toMatch(/spec\.projectId: (Invalid value|Unsupported)/);
      else expect(answer.out).toContain(message);
    }
  });

  it.each([
    ['Acme', NAME_MESSAGES.charset],
    ['acme.example', NAME_MESSAGES.charset],
    ['a'.repeat(31), NAME_MESSAGES.tooLong],
  ])('refuses metadata.name %s with the CLI message', (name, message) => {
    const doc = { ...resource('x', {}), metadata: { name } };
    const answer = run(['apply', '--dry-run=server', '-f', '-'], JSON.stringify(doc));
    expect(answer.ok).toBe(false);
    expect(answer.out).toContain(`metadata.name: Invalid value: "string": ${message}`);
    expect(validateTenantClient(doc)).toMatchObject({ ok: false, problems: [{ field: 'metadata.name', message }] });
  });
});
