/**
 * The stand-ins stay out of production (eslint.config.js, rule plana/stand-in-boundaries): nothing
 * outside sandbox/, scripts/ and test/ imports sandbox/ or scripts/, and sandbox/ imports nothing
 * outside itself but npm packages. Snippets linted as if they were files in those folders, so the
 * rule cannot stop catching an import (or go away) without this failing.
 */
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const eslint = new ESLint({ cwd: root });
const RULE = 'plana/stand-in-boundaries';

async function boundaryErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport const used = x;\n`, { filePath: path.join(root, file) });
  const fatal = result!.messages.filter((m) => m.fatal);
  expect(fatal).toEqual([]);
  return result!.messages.filter((m) => m.ruleId === RULE).map((m) => m.message);
}

describe('the platform never imports sandbox/ or scripts/', () => {
  it.each([
    ['worker/erp-installer.ts', `import { installStandInDatabase as x } from '../sandbox/erp/install.js';`],
    ['domain/erp/neutralize.ts', `import { STAND_IN_ADDONS_PATH as x } from '../../sandbox/erp/install.js';`],
    ['api/routes/saas/index.ts', `export { startErpStandIn as x } from '../../../sandbox/erp/server.js';`],
    ['services/tenant-ingress/saas.ts', `export * from '../../sandbox/erp/server.js'; const x = 1;`],
    ['lib/config.ts', `const x = await import('../sandbox/llm/server.js');`],
    ['activities/example.ts', 'const x = await import(`../sandbox/chat/server.js`);'],
    ['workflows/example.ts', `type x = import('../sandbox/erp/server.js').ErpStandIn;`],
    ['cli/example.ts', `import type { ErpStandIn as x } from '../sandbox/erp/server.js';`],
    ['worker/index.ts', `import { standInErpInstaller as x } from '../scripts/erp-stand-in.js';`],
    ['services/example.ts', `import { ensureErpTemplates as x } from '../scripts/erp-templates.js';`],
    ['api/server.ts', `import x = require('../scripts/local-servers.js');`],
  ])('%s refuses %s', async (file, code) => {
    const errors = await boundaryErrors(file, code);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^The platform never imports (sandbox|scripts)\/: composition roots/);
  });

  it.each([
    ['scripts/dev-platform.ts', `import { startErpStandIn as x } from '../sandbox/erp/server.js';`],
    ['scripts/worker.ts', `import { runWorkerProcess as x } from '../worker/index.js';`],
    ['test/support/worker.ts', `import { standInErpInstaller as x } from '../../scripts/erp-stand-in.js';`],
    ['test/integration/example.test.ts', `import { startLlmStandIn as x } from '../../sandbox/llm/server.js';`],
    ['worker/index.ts', `import { createActivities as x } from '../activities/index.js';`],
  ])('%s allows %s', async (file, code) => {
    expect(await boundaryErrors(file, code)).toEqual([]);
  });
});

describe('sandbox/ imports nothing outside sandbox/', () => {
  it.each([
    ['sandbox/erp/server.ts', `import { createPool as x } from '../../lib/db.js';`],
    ['sandbox/erp/xmlrpc.ts', `import { parseMethodCall as x } from '../../domain/erp/client.js';`],
    ['sandbox/erp/credentials.ts', `import { erpSessionId as x } from '../../services/tenant-ingress/saas.js';`],
    ['sandbox/erp/demo-data.ts', `import type { Tier as x } from '../../domain/tenants/types.js';`],
    ['sandbox/llm/server.ts', `const { config: x } = await import('../../lib/config.js');`],
    ['sandbox/stripe/sender.ts', `export { config as x } from '../../lib/config.js';`],
    ['sandbox/chat/server.ts', `import { dev as x } from '../../scripts/dev.js';`],
    ['sandbox/erp/install.ts', `import { x } from '../erp/../../lib/db.js';`],
    ['sandbox/erp/models.ts', `const x = require('../../package.json');`],
  ])('%s refuses %s', async (file, code) => {
    const errors = await boundaryErrors(file, code);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^sandbox\/ imports nothing outside sandbox\//);
  });

  it.each([
    ['sandbox/erp/server.ts', `import x from 'pg';`],
    ['sandbox/erp/server.ts', `import x from 'pino';`],
    ['sandbox/erp/xmlrpc-wire.ts', `import { PassThrough as x } from 'node:stream';`],
    ['sandbox/erp/install.ts', `import { odooSchemaSql as x } from './models.js';`],
    ['sandbox/bank/server.ts', `import { ledger as x } from '../bank/ledger.js';`],
  ])('%s allows %s', async (file, code) => {
    expect(await boundaryErrors(file, code)).toEqual([]);
  });
});

it('the whole tree keeps both directions', async () => {
  const results = await eslint.lintFiles(['.']);
  const problems = results.flatMap((r) =>
    r.messages.filter((m) => m.ruleId === RULE).map((m) => `${path.relative(root, r.filePath)}:${m.line} ${m.message}`),
  );
  expect(problems).toEqual([]);
});
