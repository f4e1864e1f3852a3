/**
 * The layout's import rules live in eslint.config.js (run by `npm test` as `npm run lint`). This
 * test lints snippets as if they were files in those folders, so a rule that stops catching what
 * it must (a changed pattern, a typo) fails here instead of letting a bad import through.
 */
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const eslint = new ESLint({ cwd: root });

async function importErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport const used = x;\n`, { filePath: path.join(root, file) });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('workflow code imports nothing the deterministic sandbox cannot run', () => {
  it.each([
    [`import x from 'node:fs';`, /no Node built-ins/],
    [`import { readFile as x } from 'fs/promises';`, /no Node built-ins/],
    [`import x from 'crypto';`, /no Node built-ins/],
    [`import { createActivities as x } from '../activities/index.js';`, /only the types of activities/],
    [`import { Client as x } from '@temporalio/client';`, /Only @temporalio\/workflow/],
    [`import x from 'pg';`, /No I\/O libraries/],
  ])('refuses %s', async (code, message) => {
    const errors = await importErrors('workflows/tenant-lifecycle/example.ts', code);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(message);
  });

  it.each([
    `import type { Activities as x } from '../../activities/index.js';`,
    `import { proxyActivities as x } from '@temporalio/workflow';`,
    `import { ApplicationFailure as x } from '@temporalio/common';`,
    `import type { Client as x } from '@temporalio/client';`,
    `import { tiers as x } from '../../domain/tenants/types.js';`,
  ])('allows %s', async (code) => {
    expect(await importErrors('workflows/tenant-lifecycle/example.ts', code)).toEqual([]);
  });
});

describe('imports flow one way: entry points → workflows/activities → domain → lib', () => {
  it.each([
    ['domain/tenants/example.ts', `import { tenantLifecycle as x } from '../../workflows/index.js';`],
    [
      'domain/tenants/example.ts',
      `import type { tenantLifecycle as x } from '../../workflows/tenant-lifecycle/index.js';`,
    ],
    ['domain/webhooks/example.ts', `import { createActivities as x } from '../../activities/index.js';`],
    ['domain/billing/example.ts', `import { buildApp as x } from '../../api/app.js';`],
    ['domain/example.ts', `import { startDispatcher as x } from '../services/webhooks/dispatcher.js';`],
    ['domain/access/example.ts', `import { run as x } from '../../cli/index.js';`],
    ['domain/access/example.ts', `import { ensureSearchAttributes as x } from '../../worker/search-attributes.js';`],
    ['activities/example.ts', `import { startDispatcher as x } from '../services/webhooks/dispatcher.js';`],
    ['workflows/tenant-lifecycle/example.ts', `import { buildApp as x } from '../../api/app.js';`],
    ['lib/example.ts', `import { searchAttributes as x } from '../workflows/definitions.js';`],
    ['lib/example.ts', `import { reserveSubdomain as x } from '../domain/tenants/registry.js';`],
  ])('%s refuses %s', async (file, code) => {
    const errors = await importErrors(file, code);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/imports only domain|Imports flow one way|lib\/ is infrastructure/);
  });

  it.each([
    ['domain/tenants/example.ts', `import { tenantWorkflowId as x } from './workflow-contract.js';`],
    ['domain/tenants/example.ts', `import { searchAttributes as x } from '../workflow-search-attributes.js';`],
    ['domain/tenants/example.ts', `import { AppError as x } from '../../lib/errors.js';`],
    ['domain/access/example.ts', `import { createKey as x } from '../service-keys/registry.js';`],
    ['activities/example.ts', `import { startRetry as x } from '../domain/webhooks/sending.js';`],
    ['workflows/example.ts', `import { dunningWorkflowId as x } from '../domain/billing/workflow-contract.js';`],
  ])('%s allows %s', async (file, code) => {
    expect(await importErrors(file, code)).toEqual([]);
  });
});

describe('lib/ is infrastructure', () => {
  it('allows its own modules and packages', async () => {
    expect(await importErrors('lib/example.ts', `import { AppError as x } from './errors.js';`)).toEqual([]);
    expect(await importErrors('lib/example.ts', `import x from 'pg';`)).toEqual([]);
  });
});

it('the whole tree is lint-clean on these rules', async () => {
  const results = await eslint.lintFiles(['workflows', 'activities', 'domain', 'lib']);
  const problems = results.flatMap((r) =>
    r.messages.map((m) => `${path.relative(root, r.filePath)}:${m.line} ${m.message}`),
  );
  expect(problems).toEqual([]);
});
