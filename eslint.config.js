// ESLint (flat config) with typescript-eslint: part of `npm test` (`npm run lint`).
// Besides the recommended rules it enforces the layout's import rules:
// - imports flow one way: entry points (api, services, cli, worker, scripts) → workflows and
//   activities → domain → lib. Nothing imports an entry point; domain/ and lib/ import no workflow or
//   activity (domain/<area>/workflow-contract.ts is what starting a workflow needs); lib/ no domain;
// - workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no activity
//   implementations (types only), no SDK packages other than @temporalio/workflow and /common;
// - stand-ins and composition roots stay out of production (rule plana/stand-in-boundaries): nothing
//   outside sandbox/, scripts/ and test/ imports sandbox/ or scripts/, and sandbox/ imports nothing
//   outside itself but npm packages.
import { builtinModules } from 'node:module';
import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// bare names here; `node:` ones are caught by the pattern below
const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));

/** A `no-restricted-imports` pattern refusing relative imports of these top-level folders. */
const layersAbove = (folders, message) => ({ regex: `^(\\./)?(\\.\\./)+(${folders.join('|')})(/|$)`, message });
const entryPoints = ['api', 'services', 'cli', 'worker'];
const entryPointsRule = layersAbove(
  entryPoints,
  'Imports flow one way (entry points → workflows/activities → domain → lib): nothing imports an entry point (api, services, cli, worker).',
);

/** The folders a module is in, by the first segment of its path in the repository. */
const repository = import.meta.dirname;
const topFolder = (file) => {
  const relative = path.relative(repository, file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? '..' : relative.split(path.sep)[0];
};
/** Folders whose code production never runs: the stand-ins and the composition roots that wire them. */
const outsideProduction = new Set(['sandbox', 'scripts', 'test']);

/**
 * Every import of a module by path (import and export declarations, `import()`, `import('…')`
 * types, `require`): a module outside sandbox/, scripts/ and test/ reaches neither sandbox/ nor
 * scripts/ (composition roots pass production code what it needs), and a module in sandbox/ reaches
 * nothing outside it (a stand-in speaks the wire protocol with npm packages or its own copy).
 */
const standInBoundaries = {
  meta: {
    type: 'problem',
    messages: {
      platformImportsStandIn:
        'The platform never imports {{folder}}/: composition roots (scripts/ for development, test/ for tests) pass production code what it needs ({{source}}).',
      standInImportsPlatform:
        'sandbox/ imports nothing outside sandbox/: a stand-in speaks the wire protocol, with npm packages or a copy of its own ({{source}}).',
    },
    schema: [],
  },
  create(context) {
    const from = topFolder(context.filename);
    const check = (node, source) => {
      if (
        typeof source !== 'string' ||
        !(source.startsWith('.') || source.startsWith('/') || source.startsWith('file:'))
      )
        return;
      const target = source.startsWith('file:')
        ? new URL(source).pathname
        : path.resolve(path.dirname(context.filename), source);
      const to = topFolder(target);
      if (from === 'sandbox' && to !== 'sandbox')
        context.report({ node, messageId: 'standInImportsPlatform', data: { source } });
      else if (!outsideProduction.has(from) && (to === 'sandbox' || to === 'scripts'))
        context.report({ node, messageId: 'platformImportsStandIn', data: { folder: to, source } });
    };
    const literal = (node) =>
      node?.type === 'Literal'
        ? node.value
        : node?.type === 'TemplateLiteral' && node.expressions.length === 0
          ? node.quasis[0].value.cooked
          : undefined;
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
      ImportExpression: (node) => check(node, literal(node.source)),
      TSImportType: (node) => check(node, node.source ? literal(node.source) : literal(node.argument?.literal)),
      TSExternalModuleReference: (node) => check(node, literal(node.expression)),
      'CallExpression[callee.name="require"]': (node) => check(node, literal(node.arguments[0])),
    };
  },
};

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'coverage/**', 'web/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { plana: { rules: { 'stand-in-boundaries': standInBoundaries } } },
    rules: { 'plana/stand-in-boundaries': 'error' },
  },
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        structuredClone: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        Response: 'readonly',
        Request: 'readonly',
        Headers: 'readonly',
        queueMicrotask: 'readonly',
      },
    },
    rules: {
      // `_`-prefixed names are deliberately unused (destructured away, placeholders)
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          caughtErrors: 'none',
        },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow code runs in the deterministic sandbox: no Node built-ins (use an activity).',
          })),
          patterns: [
            {
              regex: '^node:',
              message: 'Workflow code runs in the deterministic sandbox: no Node built-ins (use an activity).',
            },
            {
              regex: '(^|/)activities(/|$)',
              allowTypeImports: true,
              message:
                'Workflows import only the types of activities (`import type`); the worker registers the implementations.',
            },
            {
              regex: '^@temporalio/(?!workflow$|common$)',
              allowTypeImports: true,
              message: 'Only @temporalio/workflow and @temporalio/common run in the workflow sandbox.',
            },
            { regex: '^(pg|ioredis|fastify|pino|bcrypt)$', message: 'No I/O libraries in workflow code.' },
            entryPointsRule,
          ],
        },
      ],
    },
  },
  {
    files: ['activities/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [entryPointsRule] }] },
  },
  {
    files: ['domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            layersAbove(
              ['workflows', 'activities', ...entryPoints],
              'domain/ imports only domain/ and lib/ (imports flow one way: entry points → workflows/activities → domain → lib); to start or signal a workflow use its contract, domain/<area>/workflow-contract.ts.',
            ),
          ],
        },
      ],
    },
  },
  {
    files: ['lib/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            layersAbove(
              ['domain', 'workflows', 'activities', ...entryPoints],
              'lib/ is infrastructure: it imports nothing from the platform above it.',
            ),
          ],
        },
      ],
    },
  },
);
