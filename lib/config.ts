/**
 * One schema for every environment variable the platform reads. Parsed once; a bad or missing
 * variable stops the process with a message that names each one. Defaults are the local ones
 * (`npm run dev`); docker-compose.yml sets every variable explicitly. With NODE_ENV=production the
 * ERP stand-in and every development default secret are refused (productionProblems).
 */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { ConfigError, derivedSettings, type DerivedSettings } from './config-derived.js';
import { duration, key, port, url } from './setting-kinds.js';

export { ConfigError, LOOPBACK_CIDRS } from './config-derived.js';

export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),

  DATABASE_URL: url.default('postgres://plana:plana@127.0.0.1:55432/plana'),
  REDIS_URL: url.default('redis://127.0.0.1:56379'),
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('platform'),
  TEMPORAL_UI_URL: url.default('http://127.0.0.1:8233'),
  /** `npm run dev`'s private Kubernetes API server (https on loopback; its kubeconfig is DATA_DIR/kubernetes/kubeconfig). */
  DEV_KUBE_APISERVER_PORT: port.default(6443),
  /** `npm run dev`'s private Prometheus (scripts/local-prometheus.ts): it scrapes the platform and evaluates the alert rules. */
  DEV_PROMETHEUS_PORT: port.default(9090),

  /**
   * Prometheus metrics (lib/metrics.ts): each platform process answers GET /metrics on
   * METRICS_HOST:METRICS_PORT when METRICS_PORT is set (unset: no metrics server); the worker's
   * Temporal SDK metrics on TEMPORAL_METRICS_PORT (same host) when that is set.
   */
  METRICS_PORT: port.optional(),
  METRICS_HOST: z.string().default('127.0.0.1'),
  TEMPORAL_METRICS_PORT: port.optional(),

  /**
   * Traces (lib/tracing.ts), under OpenTelemetry's own variable names: `none` (the default) starts
   * nothing; `zipkin` sends the spans to OTEL_EXPORTER_ZIPKIN_ENDPOINT (Zipkin's v2 JSON API, what
   * `npm run dev` and the tests run); `otlp` sends them over OTLP/HTTP to the collector that the
   * exporter's own variables name (OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318).
   * OTEL_TRACES_SAMPLER_ARG is the share of new traces kept (parent-based: a request that arrives
   * with a `traceparent` follows its caller's decision).
   */
  OTEL_TRACES_EXPORTER: z.enum(['none', 'zipkin', 'otlp']).default('none'),
  OTEL_EXPORTER_ZIPKIN_ENDPOINT: url.default('http://127.0.0.1:9411/api/v2/spans'),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  /** Where an operator opens a trace: the trace link is TRACE_UI_URL/<traceId> (Zipkin's UI by default). */
  TRACE_UI_URL: url.default('http://127.0.0.1:9411/zipkin/traces'),

  API_HOST: z.string().default('127.0.0.1'),
  API_PORT: port.default(3000),
  API_PUBLIC_URL: url.default('http://127.0.0.1:3000'),
  /** The account API as other platform processes reach it (inside a cluster: its service name). */
  ACCOUNT_API_URL: url.default('http://127.0.0.1:3000'),
  /**
   * CLI only: the operator's service key (operator → account-api). Unset, the CLI reads it from the
   * local secret store (DATABASE_URL + SECRETS_KEY). Services never read keys from configuration:
   * targets accept what the service-key registry holds, consumers read the secret store.
   */
  OPS_API_KEY: key.optional(),
  /** Service keys: a target's periodic reload of its accepted keys (NOTIFY reloads at once), its usage flush, the consumers' secret cache. */
  SERVICE_KEY_REFRESH_MS: z.coerce.number().int().min(100).default(30_000),
  SERVICE_KEY_USAGE_FLUSH_MS: z.coerce.number().int().min(50).default(5_000),
  SERVICE_KEY_SECRET_TTL_MS: z.coerce.number().int().min(0).default(5_000),
  /**
   * A long-lived consumer process reports the key it holds for a pair to the target at least this
   * often while idle, and at once when it sees a new version (domain/service-keys/holders.ts): the
   * evidence of the `holders` switch proof. A rotation of such a pair waits for the old key to be
   * silent for at least two heartbeats plus the usage flush.
   */
  SERVICE_KEY_HOLDER_HEARTBEAT_MS: z.coerce.number().int().min(50).default(60_000),
  /**
   * Service-key rotation (workflows/rotate-service-key.ts): after the new key is registered pending,
   * how long to wait before handing it to the consumer (covers a target that missed the NOTIFY: its
   * periodic reload); how long the old key must then be silent in the target's usage records (more
   * than the consumers' secret cache TTL plus the targets' usage flush); how often usage is checked;
   * the deadline (from the hand-over) after which the rotation rolls back; and, on a roll-back, how
   * long to wait before revoking the new key (the consumers' cache TTL, with a margin).
   */
  SERVICE_KEY_ROTATION_ACCEPT_WAIT_MS: z.coerce.number().int().min(0).default(35_000),
  SERVICE_KEY_ROTATION_QUIET_MS: z.coerce
    .number()
    .int()
    .min(1)
    .default(10 * 60_000),
  SERVICE_KEY_ROTATION_POLL_MS: z.coerce.number().int().min(50).default(30_000),
  SERVICE_KEY_ROTATION_DEADLINE_MS: z.coerce.number().int().min(1).default(3600_000),
  SERVICE_KEY_ROTATION_ROLLBACK_WAIT_MS: z.coerce.number().int().min(0).default(30_000),
  /** Every live pair is rotated on this period by its schedule `rotate-annual:<caller>:<target>` (days). */
  SERVICE_KEY_ROTATION_EVERY_DAYS: z.coerce.number().int().min(1).max(3650).default(365),
  /**
   * A revoked key presented to a target (a consumer missed a rotation) raises an alert mail to
   * OPS_ALERT_EMAIL and a `service-key.revoked-key-used` CloudEvent, at most once per key id per
   * this interval (ms); the worker sends what targets recorded, looking every _POLL_MS.
   */
  SERVICE_KEY_MISUSE_ALERT_INTERVAL_MS: z.coerce.number().int().min(1000).default(3600_000),
  SERVICE_KEY_MISUSE_POLL_MS: z.coerce.number().int().min(50).default(5_000),
  OPS_ALERT_EMAIL: z.string().email().default('ops@plana.local'),

  /**
   * Where service keys live: `postgres` (service_key_secrets, sealed; the local default) or
   * `kubernetes` (domain/service-keys/kubernetes-secret-*.ts): consumers read the Secret mounted at
   * SECRETS_MOUNT_DIR (re-read when the kubelet swaps `..data`, checked every SECRETS_MOUNT_POLL_MS
   * as well); the rotation writes KUBERNETES_SECRET_NAME (`{caller}` = the pair's caller) in
   * KUBERNETES_NAMESPACE through the Kubernetes API with the credentials of KUBECONFIG, or the pod's
   * service account when it is unset (lib/kube-config.ts).
   */
  SECRET_STORE: z.enum(['postgres', 'kubernetes']).default('postgres'),
  SECRETS_MOUNT_DIR: z.string().min(1).default('/var/run/secrets/plana/service-keys'),
  SECRETS_MOUNT_POLL_MS: z.coerce.number().int().min(50).default(2_000),
  /** A kubeconfig file (its current context); unset = in-cluster credentials (the pod's service account). */
  KUBECONFIG: z.string().min(1).optional(),
  KUBERNETES_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a Kubernetes namespace name')
    .default('plana'),
  KUBERNETES_SECRET_NAME: z
    .string()
    .regex(/^[a-z0-9{}.-]+$/, 'must be a Secret name, `{caller}` allowed')
    .default('plana-service-keys-{caller}'),

  NOTIFICATIONS_HOST: z.string().default('127.0.0.1'),
  NOTIFICATIONS_PORT: port.default(8080),
  NOTIFICATIONS_URL: url.default('http://127.0.0.1:8080'),

  /** The events service (§4.3, §6): CloudEvents on a Redis stream. */
  EVENTS_HOST: z.string().default('127.0.0.1'),
  EVENTS_PORT: port.default(3001),
  EVENTS_URL: url.default('http://127.0.0.1:3001'),
  /** The Redis stream that holds the events, and about how many entries it keeps (XADD MAXLEN ~). */
  EVENTS_STREAM: z
    .string()
    .regex(/^[\w.:-]{1,100}$/, 'must be a plain Redis key name')
    .default('events'),
  EVENTS_STREAM_MAXLEN: z.coerce.number().int().min(1).default(100_000),
  /** How long the id of a published event is remembered, so a retried publish is not appended twice (seconds). */
  EVENTS_DEDUPE_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(7 * 24 * 3600),
  /** Consumers reclaim an entry another consumer read but did not acknowledge for this long (XAUTOCLAIM). */
  EVENTS_CLAIM_IDLE_MS: z.coerce.number().int().min(100).default(60_000),
  /**
   * The events service, run as its own process, lowers its CPU priority to this nice value (0: as
   * started), so on a shared host the delivery path (webhook dispatcher, PostgreSQL, the receivers)
   * gets the CPU first and a burst waits at the intake instead of queueing in the stream
   * (docs/benchmarks.md). Where each process has its own cgroup, CPU weights do this instead.
   */
  EVENTS_NICE: z.coerce.number().int().min(0).max(19).default(5),

  /**
   * Tenant webhooks (domain/webhooks, services/webhooks). URLs must be https unless
   * WEBHOOK_ALLOW_HTTP (default: on outside production). Private, loopback, link-local, CGNAT and
   * metadata addresses are refused when the socket connects, except the CIDRs of
   * WEBHOOK_ALLOWED_ADDRESSES (default: loopback in development, so a receiver on this machine works
   * under `npm run dev`; none in test and production). WEBHOOK_DNS_SERVERS (`host:port,…`):
   * resolve webhook hosts with these servers instead of the system resolver.
   */
  WEBHOOK_ALLOW_HTTP: z.enum(['true', 'false']).optional(),
  WEBHOOK_ALLOWED_ADDRESSES: z.string().optional(),
  WEBHOOK_DNS_SERVERS: z.string().default(''),
  /** One attempt's deadline (connect + answer), the largest body sent, the response excerpt kept. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000),
  WEBHOOK_MAX_PAYLOAD_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(256 * 1024),
  /** Delays between attempts after the first (Svix's schedule: about 27 hours in all), each ± WEBHOOK_RETRY_JITTER. */
  WEBHOOK_RETRY_SCHEDULE: z.string().default('5s,5m,30m,2h,5h,10h,10h'),
  WEBHOOK_RETRY_JITTER: z.coerce.number().min(0).max(0.5).default(0.2),
  /** Retry-After is honoured within [MIN, MAX]; after a 429 or a timeout the wait is at least SLOW_DOWN_MIN. */
  WEBHOOK_RETRY_AFTER_MIN: duration.prefault('1s'),
  WEBHOOK_RETRY_AFTER_MAX: duration.prefault('6 hours'),
  WEBHOOK_SLOW_DOWN_MIN: duration.prefault('1 minute'),
  /** An endpoint failing this long (no success since its first failure) is disabled and its admins told. */
  WEBHOOK_DISABLE_AFTER: duration.prefault('5 days'),
  /** Webhook messages (with their deliveries) and attempts are kept this long once their deliveries have ended (daily `webhook-retention`). */
  WEBHOOK_RETENTION_DAYS: z.coerce.number().int().min(1).default(90),
  /** The ERP events catch-up sweep (schedule `erp-events-sweep`): how often it reads what the tenant ERPs changed. */
  ERP_EVENTS_SWEEP_INTERVAL: duration.prefault('5 minutes'),
  /** The sweep leaves records written this recently to its next run (Odoo's own post may still be on its way). */
  ERP_EVENTS_SWEEP_SETTLE: duration.prefault('30s'),
  /** After a secret rotation the previous secret keeps signing (a second signature) this long. */
  WEBHOOK_SECRET_GRACE: duration.prefault('24 hours'),
  /** Dispatcher: entries per stream read, first attempts in flight per endpoint and in all, queue per endpoint. */
  WEBHOOK_DISPATCH_BATCH: z.coerce.number().int().min(1).default(200),
  /** Dispatcher: stream reads being recorded at once (the next read does not wait for the previous one's INSERT). */
  WEBHOOK_DISPATCH_PARALLEL: z.coerce.number().int().min(1).max(16).default(4),
  /**
   * Requests in flight per endpoint (first attempts, and each retry batch). 256: at 64 a burst's
   * first attempts waited in the lane longer than anywhere else (docs/benchmarks.md).
   */
  WEBHOOK_ENDPOINT_CONCURRENCY: z.coerce.number().int().min(1).default(256),
  WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).default(512),
  WEBHOOK_ENDPOINT_QUEUE_MAX: z.coerce.number().int().min(1).default(1_000),
  /**
   * A delivery still without a first attempt this long after it was recorded goes on its endpoint's
   * retry schedule, due now; one overdue by this long gets its endpoint's retry workflow told again.
   */
  WEBHOOK_SWEEP_AFTER: duration.prefault('1 minute'),
  /** The User-Agent of every attempt. */
  WEBHOOK_USER_AGENT: z.string().default('Plana-Webhooks/1.0'),
  /** The banking service (§4.2): PSD2 account information through one NextGenPSD2 adapter per bank. */
  BANKING_HOST: z.string().default('127.0.0.1'),
  BANKING_PORT: port.default(3200),
  BANKING_URL: url.default('http://127.0.0.1:3200'),
  /**
   * The banks the banking service has adapters for: `id=url` pairs, comma-separated, each url the
   * base of the bank's NextGenPSD2 (Berlin Group) XS2A interface. Locally the stand-in sandbox/bank.
   */
  BANKING_BANKS: z
    .string()
    .regex(
      /^[a-z0-9-]{1,40}=https?:\/\/[^,\s]+(,[a-z0-9-]{1,40}=https?:\/\/[^,\s]+)*$/,
      'must be id=url pairs, comma-separated',
    )
    .default('sandbox=http://127.0.0.1:3210'),
  /** How long the banking service waits for a bank; how long the account API waits for the banking service (ms). */
  BANKING_BANK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  BANKING_SERVICE_TIMEOUT_MS: z.coerce.number().int().min(100).default(15_000),
  /** The local bank stand-in (sandbox/bank) that `npm run dev` starts. */
  BANK_SANDBOX_PORT: port.default(3210),
  /** The agents service (§4.4; 8000 in production, and here: auth takes 8001 locally). */
  AGENTS_HOST: z.string().default('127.0.0.1'),
  AGENTS_PORT: port.default(8000),
  AGENTS_URL: url.default('http://127.0.0.1:8000'),
  /** How many rounds of tool calls an agent may make before it must answer; the model call's deadline. */
  AGENTS_MAX_TOOL_ROUNDS: z.coerce.number().int().min(1).max(10).default(4),
  AGENTS_MODEL_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  /** The internal data service (§5.4 "agents service → data service"): the workspace's ERP figures for the agents' tools. */
  DATA_HOST: z.string().default('127.0.0.1'),
  DATA_PORT: port.default(8002),
  DATA_URL: url.default('http://127.0.0.1:8002'),
  /**
   * The model behind the agents: any OpenAI-compatible Chat Completions API (base URL ending in /v1,
   * model name, key). Locally the deterministic stand-in in sandbox/llm (on loopback, LLM_STANDIN_PORT).
   */
  LLM_URL: url.default('http://127.0.0.1:8091/v1'),
  LLM_MODEL: z.string().min(1).default('plana-standin-1'),
  LLM_KEY: z.string().min(1).default('dev-llm-key-not-secret'),
  LLM_STANDIN_PORT: port.default(8091),
  /** The stand-in's pause between two streamed chunks (ms), so that streaming can be watched. */
  LLM_STANDIN_CHUNK_DELAY_MS: z.coerce.number().int().min(0).default(15),

  /** The support chat (Mattermost REST API v4; locally the stand-in in sandbox/chat). */
  CHAT_HOST: z.string().default('127.0.0.1'),
  CHAT_PORT: port.default(8065),
  CHAT_URL: url.default('http://127.0.0.1:8065'),
  /** The platform bot's personal access token (`Authorization: Bearer`). */
  CHAT_TOKEN: z.string().min(16, 'must be at least 16 characters').default('dev-chat-bot-token-000000000000'),
  /** The team (26 characters, Mattermost id) that holds the support rooms. */
  CHAT_TEAM_ID: z
    .string()
    .regex(/^[a-z0-9]{26}$/, 'must be a Mattermost id (26 lowercase letters/digits)')
    .default('planasupportteam0000000000'),

  SMTP_HOST: z.string().default('127.0.0.1'),
  SMTP_PORT: port.default(2525),
  MAIL_FROM: z.string().default('Plana <no-reply@plana.test>'),

  /** The tenant ERPs: where their HTTP entry (the ERP stand-in locally) listens, and their hostnames. */
  ERP_HOST: z.string().default('127.0.0.1'),
  ERP_PORT: port.default(8069),
  ERP_URL: url.default('http://127.0.0.1:8069'),
  TENANT_DOMAIN: z
    .string()
    .regex(/^[a-z0-9.-]+$/, 'must be a DNS domain')
    .default('erp.plana.test'),
  /**
   * The `admin` password of the ERP template databases: the platform signs in with it once per new
   * tenant database (to create the API user through Odoo's models) and replaces it there with a
   * per-tenant password derived from SECRETS_KEY. Set it to a long secret outside local dev.
   */
  ERP_ADMIN_PASSWORD: z.string().min(8).default('plana-dev-erp-admin'),
  /**
   * `standin` (default; development and tests only, refused in production): the ERP stand-in
   * (sandbox/erp) with its own templates. `odoo`: a real Odoo 18
   * behind the tenant ingress at ERP_URL (Odoo at ODOO_UPSTREAM_URL, `--db-filter=^%h$`) on ERP_DATABASE_URL's server, templates built by Odoo
   * (npm run odoo:templates), filestores under ODOO_DATA_DIR.
   */
  ERP_BACKEND: z.enum(['standin', 'odoo']).default('standin'),
  /**
   * With ERP_BACKEND=odoo: where Odoo itself listens. The tenant ingress (services/tenant-ingress)
   * listens at ERP_HOST:ERP_PORT (= ERP_URL), answers /svc/saas/… and sends the rest there.
   */
  ODOO_UPSTREAM_URL: url.default('http://127.0.0.1:8070'),
  /** Odoo's data dir (`filestore/<database>`): tenant filestores are copied from their template's. */
  ODOO_DATA_DIR: z.string().default(path.join(os.homedir(), '.local', 'share', 'plana', 'odoo')),
  /**
   * With ERP_BACKEND=odoo: a folder holding odoo-bin (Odoo Community 17.0, 18.0 or 19.0; its
   * odoo/release.py says which). The worker runs Odoo's own install (`odoo-bin -i`) from it when a
   * tenant of that ERP version has no template; unset, such a tenant waits for its template
   * (`npm run odoo:templates`).
   */
  ODOO_SRC: z.string().optional(),
  /**
   * The tenant ERP's module folders, comma-separated as Odoo's `--addons-path`: a restored copy is
   * neutralised by each installed module's `data/neutralize.sql` found there (domain/erp/neutralize.ts).
   * Unset with ERP_BACKEND=odoo: ODOO_SRC's `addons,odoo/addons`. The ERP stand-in's are set by
   * whoever starts the platform with it (`npm run dev`, the tests).
   */
  ERP_ADDONS_PATH: z.string().min(1).optional(),
  /** The Python odoo-bin runs with; unset: the venv scripts/odoo-setup.sh makes for ODOO_SRC's version (~/.cache/plana/odoo-venv-<version>). */
  ODOO_PYTHON: z.string().optional(),
  /**
   * The ERP stand-in's from-scratch install (a tenant whose template is missing) takes this long per
   * module, as loading a module takes seconds on real Odoo (tests watch an install in progress with it).
   */
  ERP_STANDIN_MODULE_INSTALL_TIME: duration.prefault('0ms'),
  /** Admin connection to the PostgreSQL server that holds the tenant databases and templates. */
  ERP_DATABASE_URL: url.default('postgres://plana:plana@127.0.0.1:55432/postgres'),
  /** 32 bytes, base64: encrypts stored secrets such as the tenants' ERP API passwords. */
  SECRETS_KEY: z
    .string()
    .default('ZGV2LW9ubHktc2VjcmV0cy1rZXktMzItYnl0ZXMhISE=')
    .refine((s) => Buffer.from(s, 'base64').length === 32, 'must be 32 bytes, base64-encoded'),

  /** Interactive login: HMAC secret (>= 32 chars) signing the short-lived access tokens (JWT, HS256). */
  AUTH_JWT_SECRET: z
    .string()
    .min(32, 'must be at least 32 characters')
    .default('dev-only-jwt-secret-000000000000000000000000000000'),
  /** Access token lifetime (seconds); refresh token lifetime (seconds), rotated on every use. */
  ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).default(900),
  REFRESH_TOKEN_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .default(30 * 24 * 3600),
  /** Password guessing: after this many failed logins for one e-mail from one address, 429 for the window. */
  LOGIN_MAX_FAILURES: z.coerce.number().int().min(1).default(10),
  LOGIN_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  /** Portal links: how long an invitation link and an e-mail confirmation link work (single use). */
  INVITATION_TTL: duration.prefault('7 days'),
  EMAIL_CHANGE_TTL: duration.prefault('24 hours'),
  /** The owner's activation link in the welcome e-mail: how many days it works (single use; a resend replaces it). */
  ACTIVATION_LINK_TTL_DAYS: z.coerce.number().int().min(1).max(90).default(7),
  /** A forgotten password's link: how long it works (single use). */
  PASSWORD_RESET_TTL: duration.prefault('1 hour'),
  /** Password links ("forgot your password", "send me a new link") an address, and a client address, may ask for per hour; more get 429. */
  PASSWORD_LINKS_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(1).default(5),
  PASSWORD_LINKS_PER_CLIENT_PER_HOUR: z.coerce.number().int().min(1).default(20),
  /** Invitation e-mails (invites and re-invites) a workspace may send per hour; more get 429 (no mail bombing through our relay). */
  INVITATIONS_PER_HOUR: z.coerce.number().int().min(1).default(50),
  /** The auth service (§4.5): login and refresh for internal services, sharing the account API's sessions (8000 in production, 8001 locally). */
  AUTH_HOST: z.string().default('127.0.0.1'),
  AUTH_PORT: port.default(8001),
  AUTH_URL: url.default('http://127.0.0.1:8001'),
  /**
   * The platform's own OpenID provider (§4.8), served by the auth service for the tenants' ERPs:
   * its issuer (default AUTH_URL + /application/o; the paths /authorize/, /token/, /userinfo/ and
   * /jwks/ are under it), as the ERPs' browsers and servers reach it.
   */
  OIDC_PROVIDER_ISSUER: url.optional(),
  /** A tenant's ERP as browsers reach it ({tenant_base_url}; `{host}` is the tenant's hostname): its sign-in callback is the OIDC client's redirect URI. */
  TENANT_BASE_URL: z.string().default('http://{host}:8069'),
  /** bcrypt cost for passwords and workspace API keys (10 ≈ 80 ms per hash here). */
  BCRYPT_COST: z.coerce.number().int().min(4).max(15).default(10),
  /** Workspace keys: how long a process trusts a verified token before bcrypt again (revocation is checked per request regardless). */
  API_KEY_CACHE_TTL_SECONDS: z.coerce.number().int().min(1).default(300),
  API_KEY_CACHE_SIZE: z.coerce.number().int().min(1).default(10_000),
  /** How often a process writes the keys' last_used_at (and flushes the execution log) to PostgreSQL. */
  API_KEY_USAGE_FLUSH_MS: z.coerce.number().int().min(100).default(5_000),
  EXECUTION_LOG_FLUSH_MS: z.coerce.number().int().min(50).default(1_000),
  /** Execution log retention (days, §8: 90) and how many daily partitions to create ahead. */
  EXECUTION_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).default(90),
  EXECUTION_LOG_PARTITIONS_AHEAD: z.coerce.number().int().min(1).default(7),
  /**
   * The log store (VictoriaLogs, docs/operators.md "Log store"): where the worker mirrors the
   * execution log from PostgreSQL (every LOG_STORE_MIRROR_INTERVAL_MS, backing off to a minute
   * while the store is down) and where the CLI and the ops API read it. Unset: no mirror, no
   * readers. Each process's own log lines go there when its environment has LOG_STORE_URL
   * (lib/log-shipper.ts). In development it defaults to the store `npm run dev` starts, which keeps
   * LOG_STORE_RETENTION.
   */
  LOG_STORE_URL: url.optional(),
  LOG_STORE_MIRROR_INTERVAL_MS: z.coerce.number().int().min(50).default(1_000),
  LOG_STORE_RETENTION: z
    .string()
    .regex(/^\d+[dwy]$/, 'must be a VictoriaLogs period of at least a day, e.g. 90d')
    .default('90d'),
  /** Default Workspace API limits per key (§8); operators override per workspace. */
  RATE_LIMIT_BURST: z.coerce.number().int().min(1).default(100),
  RATE_LIMIT_PER_SECOND: z.coerce.number().positive().default(30),
  RATE_LIMIT_AGENT_PER_MINUTE: z.coerce.number().int().min(1).default(10),
  /** Default Workspace API limit per workspace, all its keys together (§8's figures; never below the per-key limit). */
  RATE_LIMIT_WORKSPACE_BURST: z.coerce.number().int().min(1).default(100),
  RATE_LIMIT_WORKSPACE_PER_SECOND: z.coerce.number().positive().default(30),
  /** Default cap on a workspace's live API keys; operators change it per workspace. */
  API_KEY_MAX_PER_WORKSPACE: z.coerce.number().int().min(1).default(50),
  /** OIDC login (§4.8); unset issuer = OIDC disabled. The redirect URI defaults to API_PUBLIC_URL + /api/auth/oidc/callback. */
  OIDC_ISSUER_URL: url.optional(),
  OIDC_CLIENT_ID: z.string().default('plana-account-api'),
  OIDC_CLIENT_SECRET: z.string().optional(),
  OIDC_REDIRECT_URI: url.optional(),

  /** Tenant lifecycle (§3.2): each tenant's filestore folder lives under FILESTORE_ROOT/<tenant>; nothing outside it is ever touched. Default: DATA_DIR/filestore. */
  FILESTORE_ROOT: z.string().optional(),
  /** The worker's scratch folder for a backup's `pg_dump` file and filestore archive before they go to the object store (and a restore's after they come back). Default: DATA_DIR/backups. */
  BACKUP_ROOT: z.string().optional(),
  /**
   * The S3-compatible object store backups are kept in (§3.2, §8): endpoint (unset = AWS S3 of
   * BACKUP_S3_REGION), bucket and keys (unset = the AWS SDK's default credential chain). Locally,
   * `npm run dev` and the tests start SeaweedFS and set these.
   */
  BACKUP_S3_ENDPOINT: url.optional(),
  BACKUP_S3_REGION: z.string().min(1).default('us-east-1'),
  BACKUP_S3_BUCKET: z
    .string()
    .regex(
      /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
      'must be an S3 bucket name (3-63 lower-case letters, digits, dots, dashes)',
    )
    .default('plana-backups'),
  BACKUP_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  BACKUP_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Path-style addressing (http://endpoint/bucket/key), which most S3-compatible stores need; default true when an endpoint is set. */
  BACKUP_S3_FORCE_PATH_STYLE: z.enum(['true', 'false']).optional(),
  /** Backup objects larger than this go up as an S3 multipart upload in parts of this size (MiB; S3's parts are 5 MiB to 5 GiB, one PUT at most 5 GiB). */
  BACKUP_S3_PART_SIZE_MB: z.coerce.number().int().min(5).max(5120).default(16),
  /** How often each tenant's backup schedule (`backup:<tenant>`) runs. */
  BACKUP_INTERVAL: duration.prefault('1 day'),
  /** How long stored backups are kept per tier (§8: starter 30 days, pro 90 days; enterprise is our choice: 365 days). */
  BACKUP_RETENTION_STARTER_DAYS: z.coerce.number().int().min(1).default(30),
  BACKUP_RETENTION_PRO_DAYS: z.coerce.number().int().min(1).default(90),
  BACKUP_RETENTION_ENTERPRISE_DAYS: z.coerce.number().int().min(1).default(365),
  /** How often each tier's backup drill (`backup-drill-<tier>`) restores every live tenant's latest backup into a scratch tenant and compares. */
  BACKUP_DRILL_INTERVAL: duration.prefault('7 days'),
  /** How long a backup restored as a new tenant (a staging copy) stays before it is torn down, unless kept; a restore may ask for another time. */
  RESTORE_KEEP_FOR: duration.prefault('1 day'),
  /** How long a cancelled tenant keeps everything before it is deprovisioned (reactivate stops the timer). */
  TENANT_SOAK_PERIOD: duration.prefault('30 days'),
  /** A tenant not Ready this long after an apply gets Ready=False/Unavailable with what blocks it (§3.2: 5 minutes). */
  TENANT_READY_DEADLINE: duration.prefault('5 minutes'),
  /** How often the readiness probe asks a tenant's /web/health; the first retry delay of a failed reconcile. */
  TENANT_PROBE_INTERVAL: duration.prefault('2 seconds'),
  /** How often a Ready tenant is probed (its database answers as the API user). */
  TENANT_READY_PROBE_INTERVAL: duration.prefault('1 minute'),
  /** The longest wait between two reconciles of a tenant that is not Ready (exponential backoff up to this). */
  TENANT_RECONCILE_BACKOFF_MAX: duration.prefault('5 minutes'),
  /**
   * The TenantClient controller (services/tenant-controller), with KUBECONFIG's credentials (unset:
   * the pod's service account; lib/kube-config.ts): how often it compares every TenantClient with its
   * workflow's status, the Lease (in KUBERNETES_NAMESPACE) that elects one leader among replicas,
   * and an optional label selector (e.g. `plana.dev/shard=a`) for the TenantClients it owns.
   */
  TENANT_CONTROLLER_RESYNC: duration.prefault('30 seconds'),
  TENANT_CONTROLLER_LEASE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a Lease name')
    .default('tenant-controller'),
  TENANT_CONTROLLER_LEASE_DURATION: duration.prefault('15 seconds'),
  TENANT_CONTROLLER_LABEL_SELECTOR: z.string().min(1).optional(),
  /** A tenant's workflow continues as new once its history has this many events (it also does when Temporal suggests it). */
  TENANT_HISTORY_LIMIT: z.coerce.number().int().min(100).default(5_000),
  /**
   * Billing (domain/billing): the Stripe webhook endpoint's signing secret (`whsec_…`, from the
   * Stripe dashboard or `stripe listen`) and how old a signed event may be (Stripe's default 300 s).
   */
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_\S{8,}$/, 'must be a Stripe webhook signing secret (whsec_…)')
    .default('whsec_dev_only_local_webhook_secret'),
  STRIPE_WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().min(1).max(3600).default(300),
  /** Dunning: how long after a failed payment the workspace is suspended unless it pays. */
  BILLING_GRACE_PERIOD: duration.prefault('7 days'),
  /** How long an API replica trusts what it read of a workspace's suspension (a payment lifts it within this). */
  WORKSPACE_STANDING_CACHE_MS: z.coerce.number().int().min(0).default(1_000),
  /** Directory of the PostgreSQL client binaries (pg_dump) backups use; unset = pg_dump from PATH. */
  PG_BIN: z.string().optional(),

  /**
   * Local only: where `npm run dev` keeps its servers' data, and the demo admin's password. Default
   * `.data`, and `.data/odoo` with ERP_BACKEND=odoo: the tenant databases of the stand-in and of
   * real Odoo are not interchangeable, so each backend has its own platform data (tenants, routes,
   * ERP databases and templates) and switching between them breaks neither.
   */
  DATA_DIR: z.string().optional(),
  DEV_ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
});

/** The configuration as the platform reads it: the table's values, the derived ones in their place (./config-derived.ts). */
export type Config = Omit<z.infer<typeof configSchema>, keyof DerivedSettings> & DerivedSettings;

/** The object store `npm run dev` starts (SeaweedFS, scripts/local-seaweedfs.ts): the development default of BACKUP_S3_*. */
export const LOCAL_OBJECT_STORE = {
  BACKUP_S3_ENDPOINT: 'http://127.0.0.1:8333',
  BACKUP_S3_ACCESS_KEY_ID: 'plana-dev',
  BACKUP_S3_SECRET_ACCESS_KEY: 'plana-dev-only-backups-secret',
} as const;

/** The log store `npm run dev` starts (VictoriaLogs, scripts/local-victorialogs.ts): the development default of LOG_STORE_URL. */
export const LOCAL_LOG_STORE_URL = 'http://127.0.0.1:9428';

/**
 * The settings whose development default is a secret written in this repository: in production
 * each must be set, to something else.
 */
export const DEVELOPMENT_DEFAULT_SECRETS = [
  'SECRETS_KEY',
  'AUTH_JWT_SECRET',
  'ERP_ADMIN_PASSWORD',
  'STRIPE_WEBHOOK_SECRET',
  'LLM_KEY',
  'CHAT_TOKEN',
] as const;
/** The database URLs, whose development default holds the local server's password. */
const DEVELOPMENT_DATABASE_URLS = ['DATABASE_URL', 'ERP_DATABASE_URL'] as const;

type ParsedSettings = z.infer<typeof configSchema>;
let developmentDefaults: ParsedSettings | undefined;

/**
 * What production (NODE_ENV=production) refuses: the ERP stand-in, which is for development and
 * tests only, and each development default secret, whether left unset or set to that value.
 */
function productionProblems(c: ParsedSettings): string[] {
  if (c.NODE_ENV !== 'production') return [];
  const dev = (developmentDefaults ??= configSchema.parse({}));
  const problems: string[] = [];
  if (c.ERP_BACKEND === 'standin')
    problems.push(
      'ERP_BACKEND: the ERP stand-in (standin) is for development and tests; production runs real Odoo (ERP_BACKEND=odoo)',
    );
  for (const name of DEVELOPMENT_DEFAULT_SECRETS)
    if (c[name] === dev[name]) problems.push(`${name}: the development default is not a secret; set it to your own`);
  for (const name of DEVELOPMENT_DATABASE_URLS)
    if (new URL(c[name]).password === new URL(dev[name]).password)
      problems.push(`${name}: its password is the development default; use your database's own`);
  if (c.BACKUP_S3_SECRET_ACCESS_KEY === LOCAL_OBJECT_STORE.BACKUP_S3_SECRET_ACCESS_KEY)
    problems.push('BACKUP_S3_SECRET_ACCESS_KEY: the development default is not a secret; set it to your own');
  return problems;
}

/** The configuration of `env`; a bad or missing variable is a ConfigError naming each one. */
export function parseConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const refused = productionProblems(result.data);
  if (refused.length)
    throw new ConfigError(`Invalid configuration for production (NODE_ENV=production):\n  ${refused.join('\n  ')}`);
  const development = result.data.NODE_ENV === 'development';
  const localStore = development && !result.data.BACKUP_S3_ENDPOINT ? LOCAL_OBJECT_STORE : {};
  const localLogStore = development && !result.data.LOG_STORE_URL ? { LOG_STORE_URL: LOCAL_LOG_STORE_URL } : {};
  return { ...result.data, ...localStore, ...localLogStore, ...derivedSettings(result.data) };
}

let cached: Config | undefined;

/** The process-wide configuration, parsed on first use. */
export function config(): Config {
  cached ??= parseConfig();
  return cached;
}
