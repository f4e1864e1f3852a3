/**
 * Workflow code runs in Temporal's deterministic sandbox: it may not import Node built-ins or
 * activity implementations (only their types). This test reads every workflow file and fails on
 * an import that breaks the rule, naming file and import.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const workflowsDir = path.resolve(import.meta.dirname, '../../workflows');
const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
const importRe = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

export function forbiddenImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(importRe)) {
    const typeOnly = Boolean(m[2]);
    const spec = m[3] ?? m[4] ?? m[5] ?? '';
    if (builtins.has(spec) || builtins.has(spec.split('/')[0]!)) found.push(`${spec} (Node built-in)`);
    else if (/(^|\/)activities(\/|$)/.test(spec) && !typeOnly) found.push(`${spec} (activity implementation; use \`import type\`)`);
    else if (spec.startsWith('@temporalio/') && !['@temporalio/workflow', '@temporalio/common'].includes(spec) && !typeOnly)
      found.push(`${spec} (not available in the workflow sandbox)`);
  }
  return found;
}

describe('workflow files', () => {
  const files = (readdirSync(workflowsDir, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));

  it('exist', () => expect(files.length).toBeGreaterThan(0));

  it.each(files)('%s imports no Node built-ins or activity implementations', (file) => {
    expect(forbiddenImports(readFileSync(path.join(workflowsDir, file), 'utf8'))).toEqual([]);
  });

  it('the rule catches what it must', () => {
    expect(forbiddenImports(`import fs from 'node:fs';`)).toEqual(['node:fs (Node built-in)']);
    expect(forbiddenImports(`import { readFile } from 'fs/promises';`)).toEqual(['fs/promises (Node built-in)']);
    expect(forbiddenImports(`import { createActivities } from '../activities/index.js';`)).toHaveLength(1);
    expect(forbiddenImports(`import type { Activities } from '../activities/index.js';`)).toEqual([]);
    expect(forbiddenImports(`import { proxyActivities } from '@temporalio/workflow';`)).toEqual([]);
  });
});
