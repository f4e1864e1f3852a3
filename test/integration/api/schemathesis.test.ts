/**
 * The API against its own OpenAPI document, with schemathesis (PyPI, installed by
 * scripts/bootstrap.sh into the cache folder): a bounded run over every operation of `/docs/json`,
 * all checks on, once per kind of credential — none, an admin's access token, a workspace key
 * (`ws_live_…`, scope `*`) and the ops key. The run must find nothing: every answer conforms to
 * the document (status, content type, schema, headers), no 5xx, nothing valid by the document
 * refused and nothing invalid accepted. A fixed seed keeps each run the same; no timing is asserted.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startPortal, type Portal } from '../../support/portal.js';
import { addUser, addWorkspace, createKey, login } from '../../support/workspace-api.js';
import { testKeys } from '../../support/service-keys.js';
import { freePort } from '../../../scripts/local-servers.js';
import { startBankStandIn, type BankStandIn } from '../../../sandbox/bank/server.js';
import { startBanking } from '../../../services/banking/server.js';
import { agentsSettings, startAgentServices, startTestLlm } from '../../support/agents.js';

const SCHEMATHESIS_VERSION = '4.32.5';
const schemathesis = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'),
  'plana',
  `schemathesis-${SCHEMATHESIS_VERSION}`,
  'bin',
  'schemathesis',
);
/** Test cases per operation and phase: bounded so the four runs stay within a few minutes on 2 cores. */
const MAX_EXAMPLES = 30;

let api: Portal;
let bank: BankStandIn;
let banking: Awaited<ReturnType<typeof startBanking>>;
let llm: Awaited<ReturnType<typeof startTestLlm>>;
let agentServices: Awaited<ReturnType<typeof startAgentServices>>;
const credentials: Record<string, string[]> = {};
let configFile: string;

/**
 * The execution log's cursor is opaque. (TenantClients are applied on the Kubernetes API, not
 * here: test/integration/tenant-lifecycle.test.ts.)
 */
const CONFIG = `
# The run shares PostgreSQL and Temporal with the other test files: values taken from responses
# (the stateful phase, "extra data sources") would be their live tenants, and cancelling one of
# those is not this test's business. Every value is generated from the document instead.
[phases.examples]
extra-data-sources = { responses = false }
[phases.coverage]
extra-data-sources = { responses = false }
[phases.fuzzing]
extra-data-sources = { responses = false }
[phases.stateful]
enabled = false

# a cursor is opaque: a string the API did not return is refused with 400 by design
[[operations]]
include-path = "/api/portal/execution-log"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403] } }

# banking: what the document cannot say is the bank's and the consent's state: a validUntil in the
# past or a one-off consent read more than once a day (400), no such consent (404), no valid consent
# yet (409), the bank's frequencyPerDay used up (429)
[[operations]]
include-path-regex = "^/api/banking/"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403, 404, 409, 429] } }
# the agents' executions cursor is opaque too; an agent id the catalog does not hold is 404 by design
[[operations]]
include-path-regex = "/agents/[^/]+/executions$"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403, 404] } }
# a NUL character in text is refused (400) everywhere, which a JSON Schema string cannot say
[[operations]]
include-path-regex = "^/api/agents/[^/]+/chat"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403, 404, 429] } }
# Stripe's events: without a valid Stripe-Signature over the body every request is a 400 by design
[[operations]]
include-name = "POST /api/webhooks/stripe"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400] } }
# a webhook URL is checked beyond its schema (scheme, credentials, private addresses): 400 by design
# (one operation: include-name; include-path with include-method would select every path OR every
# POST, since schemathesis joins a table's include filters with "or")
[[operations]]
include-name = "POST /api/portal/webhooks"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403] } }

[[operations]]
include-name = "PATCH /api/portal/webhooks/{id}"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403, 404] } }
# sign-in and e-mailed links are limited per address and per client (this run is one client): 429
[[operations]]
include-name = ["POST /api/auth/login", "POST /api/auth/password/forgot", "POST /api/portal/team/invitations/renew"]
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403, 404, 429] } }
# a link's token the API did not issue is unknown (404) by design
[[operations]]
include-name = ["POST /api/auth/password/reset", "POST /api/portal/profile/email/confirm", "POST /api/portal/team/invitations/accept", "POST /api/portal/team/invitations/check"]
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403, 404] } }
# states the document cannot say: a person invited or a member already (409); a tenant that is not
# cancelled and not confirmed, or restoring already (409)
[[operations]]
include-name = ["POST /api/portal/team/invite", "POST /api/ops/tenants/{name}/restore-in-place"]
checks = { positive_data_acceptance = { expected-statuses = ["2xx", 400, 401, 403, 404, 409] } }
`;

beforeAll(async () => {
  if (!existsSync(schemathesis))
    throw new Error(
      `${schemathesis} is missing: run scripts/bootstrap.sh (it installs schemathesis ${SCHEMATHESIS_VERSION})`,
    );
  configFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'schemathesis-')), 'schemathesis.toml');
  writeFileSync(configFile, CONFIG);
  // the retention endpoint must never drop the shared test database's partitions other files use
  // the banking routes go to a real banking service and bank stand-in
  bank = await startBankStandIn();
  const bankingPort = String(await freePort());
  const bankingUrl = `http://127.0.0.1:${bankingPort}`;
  // the agents behind /api/agents/… (the model is the stand-in; the workspace has no ERP, so tools fail politely)
  llm = await startTestLlm();
  const agents = await agentsSettings(llm.url);
  // with the notifications service and the SMTP sink: invitations and e-mail changes send real mail
  // a Redis database of its own: the fuzzing's thousands of sign-ins and e-mailed links would use up
  // the per-client limits (this machine is one client) of the other test files on the shared Redis
  api = await startPortal({
    EXECUTION_LOG_RETENTION_DAYS: '36500',
    BANKING_URL: bankingUrl,
    REDIS_URL: `${inject('redisUrl')}/9`,
    ...agents,
  });
  banking = await startBanking({
    ...api.cfg,
    BANKING_PORT: Number(bankingPort),
    BANKING_URL: bankingUrl,
    BANKING_BANKS: `sandbox=${bank.url}`,
  });
  agentServices = await startAgentServices(api.cfg);
  const workspace = await addWorkspace(api.pool);
  // generous limits: a 429 is documented, but a run spent on 429s tests nothing else
  await api.pool.query(
    'INSERT INTO workspace_rate_limits (workspace_id, burst, per_second, agent_per_minute) VALUES ($1, 100000, 100000, 100000)',
    [workspace.id],
  );
  const admin = await addUser(api.pool, [{ workspaceId: workspace.id, role: 'admin' }]);
  const accessToken = await login(api.base, admin);
  const key = await createKey(api.base, accessToken, { name: 'schemathesis', scopes: ['*'] });
  credentials.none = [];
  // logging out would end the token the rest of the run uses: that operation runs without credentials
  credentials['admin access token'] = [
    '-H',
    `Authorization: Bearer ${accessToken}`,
    '--exclude-path',
    '/api/auth/logout',
  ];
  credentials['workspace key'] = ['-H', `Authorization: Bearer ${key.token}`];
  credentials['ops key'] = ['-H', `X-API-Key: ${testKeys.operator}`];
});

afterAll(async () => {
  await api?.close();
  await banking?.close();
  await bank?.close();
  await agentServices?.close();
  await llm?.close();
});

function run(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    // its working folder (schemathesis keeps a cache there) is the run's own temporary folder
    const cwd = path.dirname(configFile);
    execFile(
      schemathesis,
      args,
      { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_HOOKS: '' } },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}\n${stderr}` });
      },
    );
  });
}

describe('schemathesis against /docs/json', () => {
  it.each(['none', 'admin access token', 'workspace key', 'ops key'])(
    'with credential: %s — no failures',
    async (kind) => {
      const { code, output } = await run([
        '--config-file',
        configFile,
        'run',
        `${api.base}/docs/json`,
        '--url',
        api.base,
        '--checks',
        'all',
        '--max-examples',
        String(MAX_EXAMPLES),
        '--seed',
        '20261123',
        '--generation-database',
        'none',
        // one worker: CPython 3.11 can fail compiling in two threads at once ("AST constructor
        // recursion depth mismatch"), an error of the tool, not of the API
        '--workers',
        '1',
        '--no-color',
        '--request-timeout',
        '20',
        ...credentials[kind]!,
      ]);
      // the summary on success; on failure every failure with its reproduction (curl) command
      console.log(`schemathesis (${kind}) exited with ${code}:\n${output.slice(code === 0 ? -4_000 : -60_000)}`);
      expect(code).toBe(0);
    },
    240_000,
  );
});
