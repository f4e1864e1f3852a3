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

describe('lib/ is infrastructure', () => {
  it('refuses an import from the platform above it', async () => {
    expect(await importErrors('lib/example.ts', `import { searchAttributes as x } from '../workflows/definitions.js';`)).toHaveLength(1);
    expect(await importErrors('lib/example.ts', `import { reserveSubdomain as x } from '../domain/tenants/registry.js';`)).toHaveLength(1);
  });

  it('allows its own modules and packages', async () => {
    expect(await importErrors('lib/example.ts', `import { AppError as x } from './errors.js';`)).toEqual([]);
    expect(await importErrors('lib/example.ts', `import x from 'pg';`)).toEqual([]);
  });
});

it('the whole tree is lint-clean on these rules', async () => {
  const results = await eslint.lintFiles(['workflows', 'lib']);
  const problems = results.flatMap((r) => r.messages.map((m) => `${path.relative(root, r.filePath)}:${m.line} ${m.message}`));
  expect(problems).toEqual([]);
});
