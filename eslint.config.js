// ESLint (flat config) with typescript-eslint: part of `npm test` (`npm run lint`).
// Besides the recommended rules it enforces the layout's import rules:
// - imports flow one way: entry points (api, services, cli, worker, scripts) → workflows and
//   activities → domain → lib. Nothing imports an entry point; domain/ and lib/ import no workflow or
//   activity (domain/<area>/workflow-contract.ts is what starting a workflow needs); lib/ no domain;
// - workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no activity
//   implementations (types only), no SDK packages other than @temporalio/workflow and /common.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// bare names here; `node:` ones are caught by the pattern below
const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));

/** A `no-restricted-imports` pattern refusing relative imports of these top-level folders. */
const layersAbove = (folders, message) => ({ regex: `^(\\./)?(\\.\\./)+(${folders.join('|')})(/|$)`, message });
const entryPoints = ['api', 'services', 'cli', 'worker', 'scripts'];
const entryPointsRule = layersAbove(
  entryPoints,
  'Imports flow one way (entry points → workflows/activities → domain → lib): nothing imports an entry point (api, services, cli, worker, scripts).',
);

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', 'coverage/**', 'web/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
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
              ['workflows', 'activities', ...entryPoints, 'sandbox'],
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
              ['domain', 'workflows', 'activities', ...entryPoints, 'sandbox'],
              'lib/ is infrastructure: it imports nothing from the platform above it.',
            ),
          ],
        },
      ],
    },
  },
);
