import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { z } from 'zod';
import { developmentMasterKey, otlpHeadersEnv, parseTrustProxy, toolModulePaths, tracingConfig } from './lib/config-values.ts';
import { modelPricesEnv, type ModelPrices } from './lib/model-prices.ts';

/** The only reader of process.env: one schema, one frozen typed config. */
const optionalString = z.string().optional();
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  HOST: optionalString,
  PORT: port.default(3000),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }).optional(),
  /** Connections of this process's main pool on PostgreSQL (the job queue has 4 more, the process bus 2). */
  DATABASE_POOL_SIZE: positiveInt.max(500).default(10),
  DATA_DIR: z.string().default('./data'),
  ENCRYPTION_MASTER_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  APP_HOST: httpUrl.optional(),
  API_HOST: httpUrl.optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: optionalString,
  RUN_WORKERS: booleanFlag.default(true),
  /** A client must send its request line and headers within this... */
  HTTP_HEADERS_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(10),
  /** ...and its whole request, body included, within this; otherwise 408 and the connection closes. */
  HTTP_REQUEST_TIMEOUT_SECONDS: z.coerce.number().positive().max(3600).default(30),
  /** A webhook message id answers a retry of its event this long (Svix retries for about 28 hours). */
  WEBHOOK_MESSAGE_ID_RETENTION_HOURS: z.coerce.number().positive().max(2160).default(48),
  /** Ingest bodies being received at once, at most; past it a post gets 503 at once (slow senders cannot hold the memory). */
  INGEST_MAX_PENDING_BODIES: positiveInt.max(100_000).default(512),

  CODEHOST_CLIENT_ID: optionalString,
  CODEHOST_CLIENT_SECRET: optionalString,
  CODEHOST_AUTHORIZE_URL: httpUrl.default('https://github.com/login/oauth/authorize'),
  CODEHOST_TOKEN_URL: httpUrl.default('https://github.com/login/oauth/access_token'),
  CODEHOST_API_URL: httpUrl.default('https://api.github.com'),

  IDP_CLIENT_ID: optionalString,
  IDP_CLIENT_SECRET: optionalString,
  IDP_ISSUER: httpUrl.default('https://accounts.google.com'),
  IDP_SCOPES: z.string().default('openid email profile'),

  EXTERNAL_AUTH_DEFAULT_PROVIDER: optionalString,
  EXTERNAL_JWT_PROVIDER_NAME: z.string().default('jwt'),
  EXTERNAL_JWT_ISSUER: optionalString,
  EXTERNAL_JWT_JWKS_URL: httpUrl.optional(),
  EXTERNAL_JWT_AUDIENCE: optionalString,
  EXTERNAL_JWT_USER_ID_CLAIM: z.string().default('sub'),
  EXTERNAL_JWT_EMAIL_CLAIM: z.string().default('email'),
  EXTERNAL_JWT_FIRST_NAME_CLAIM: z.string().default('given_name'),
  EXTERNAL_JWT_LAST_NAME_CLAIM: z.string().default('family_name'),
  EXTERNAL_JWT_ADMIN_CLAIM: optionalString,

  SMTP_URL: optionalString,
  MAIL_API_KEY: optionalString,
  MAIL_API_URL: httpUrl.default('https://api.resend.com'),
  MAIL_FROM: z.string().default('Agent Platform <no-reply@agent-platform.localhost>'),
  /** Each call to the mail provider's API (orgs' email integrations); transient failures are retried. */
  MAIL_API_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(15),
  MAIL_API_RETRIES: z.coerce.number().int().min(0).max(5).default(2),
  /** Slack's Web API (orgs' own Slack apps, for approvals in Slack); a proxy or a test's fake may stand in. */
  SLACK_API_URL: httpUrl.default('https://slack.com/api/'),
  SLACK_API_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(10),
  /** Inbound email: the provider's notifications, and what a received email may bring. */
  EMAIL_WEBHOOK_MAX_BYTES: positiveInt.max(10 * 1024 * 1024).default(256 * 1024),
  EMAIL_MAX_ATTACHMENT_BYTES: positiveInt.max(100 * 1024 * 1024).default(10 * 1024 * 1024),
  EMAIL_MAX_ATTACHMENTS: positiveInt.max(100).default(20),
  /** Recipients of one sendEmail (the provider takes at most 50). */
  EMAIL_MAX_RECIPIENTS: positiveInt.max(50).default(10),
  /** Automatic replies in one thread within an hour, after which its mail waits for a human: a loop's brake. */
  EMAIL_AUTO_REPLIES_PER_THREAD_PER_HOUR: positiveInt.max(1000).default(5),
  /** How long a worker holds a notification it processes before another may take it over (it renews while alive). */
  EMAIL_PROCESSING_LEASE_SECONDS: z.coerce.number().positive().max(3600).default(60),
  /** Notifications one worker process processes at once (each mostly waits on the provider). */
  EMAIL_CONCURRENCY: positiveInt.max(200).default(32),
  /** How long a worker gathers the mail notifications it is told of before claiming them together (0: at once). */
  EMAIL_BATCH_WINDOW_MS: z.coerce.number().int().min(0).max(5000).default(250),

  RATE_LIMIT_REDIS_URL: z.url({ protocol: /^rediss?$/, error: 'must be a redis:// URL' }).optional(),
  AUTH_RATE_LIMIT_PER_MINUTE: positiveInt.default(10),
  WEBHOOK_IP_RATE_LIMIT_PER_MINUTE: positiveInt.default(600),
  /** Ingest transactions at once on PostgreSQL (of the pool's 10), as many for runs' steps; later writes join them. */
  INGEST_WRITE_CONCURRENCY: positiveInt.max(8).default(2),
  /** bcrypt's cost for stored passwords (the spec's 12); lower only where speed beats strength, as in tests. */
  PASSWORD_HASH_COST: z.coerce.number().int().min(4).max(15).default(12),
  SESSION_CACHE_TTL_SECONDS: z.coerce.number().min(0).max(60).default(5),

  MODEL_PROVIDER: z.enum(['openai-compatible', 'openai', 'anthropic']).default('openai-compatible'),
  MODEL_BASE_URL: httpUrl.optional(),
  MODEL_API_KEY: optionalString,
  MODEL_NAME: optionalString,
  MODEL_TIMEOUT_SECONDS: z.coerce.number().positive().max(3600).default(120),
  MODEL_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(2),
  MODEL_PRICES: modelPricesEnv.optional(),
  ACTION_MAX_STEPS: positiveInt.max(1000).default(20),
  ACTION_LEASE_SECONDS: z.coerce.number().positive().max(3600).default(30),
  /** Agent runs at once per worker: a run mostly waits on its model and holds no connection meanwhile. */
  ACTION_CONCURRENCY: positiveInt.max(500).default(200),
  /** Experiment replays at once per worker, in slots of their own: live actions never wait for them. */
  EXPERIMENT_CONCURRENCY: positiveInt.max(100).default(4),
  JOB_POLL_SECONDS: z.coerce.number().positive().max(3600).default(2),
  /** A running job's worker says it lives every half of this; silent this long (it died), the job goes to its retry. */
  JOB_HEARTBEAT_SECONDS: z.coerce.number().int().min(10).max(3600).default(30),
  /** At a stop, how long work in flight (runs, email notifications, jobs) gets to finish before it is handed back. */
  SHUTDOWN_GRACE_SECONDS: z.coerce.number().positive().max(300).default(10),
  WORKER_NICENESS: z.coerce.number().int().min(0).max(19).default(10),
  /** A `worker`'s main pool: PostgreSQL runs its statements at full priority, so few at once leave cores to the serves. */
  WORKER_DATABASE_POOL_SIZE: positiveInt.max(500).default(3),
  /** Lets callback URLs reach loopback and private networks (tests, self-hosting), never metadata services; off by default. */
  CALLBACK_ALLOW_PRIVATE_NETWORKS: booleanFlag.default(false),
  /** MCP servers on private or loopback addresses (an org's own network; never metadata services): off unless allowed. */
  MCP_ALLOW_PRIVATE_NETWORKS: booleanFlag.default(false),
  MCP_CONNECT_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(10),
  /** One tools/call, from request to result; past it the call fails and the model is told. */
  MCP_CALL_TIMEOUT_SECONDS: z.coerce.number().positive().max(3600).default(60),
  /** A tool result larger than this (as JSON) is cut, and the model is told so. */
  MCP_MAX_RESULT_BYTES: positiveInt.max(10_000_000).default(100_000),
  CALLBACK_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(15),
  /** Seconds between attempts after the first (Svix's schedule); one more entry, one more attempt. */
  CALLBACK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/, 'comma-separated seconds')
    .default('5,300,1800,7200,18000,36000,36000'),
  CALLBACK_CONCURRENCY: positiveInt.max(5000).default(500),
  /** How long a user's limits from their external auth provider (getUserLimits) are reused. */
  USER_LIMITS_CACHE_SECONDS: z.coerce.number().min(0).max(3600).default(60),
  /** A provider's getUserLimits that has not answered by then sets no limit (logged). */
  USER_LIMITS_TIMEOUT_SECONDS: z.coerce.number().positive().max(60).default(5),
  /** A document render past this is stopped and its tool call fails. */
  DOCUMENT_RENDER_TIMEOUT_SECONDS: z.coerce.number().positive().max(600).default(30),
  /** Worker threads that render documents (default: the cores less one, at least 1, at most 4). */
  DOCUMENT_RENDER_THREADS: positiveInt.max(64).optional(),
  /** OpenTelemetry traces over OTLP/HTTP (off unless an endpoint is set), by the standard variables. */
  OTEL_SDK_DISABLED: booleanFlag.default(false),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeadersEnv.optional(),
  OTEL_SERVICE_NAME: z.string().max(200).default('agent-platform'),
  /** Prompts, answers, tool arguments and results in spans: off, since they may hold personal data. */
  OTEL_RECORD_CONTENT: booleanFlag.default(false),
  /** The spec's samplers; an unknown one or a bad ratio is a notice and the default (config-values.ts). */
  OTEL_TRACES_SAMPLER: optionalString,
  OTEL_TRACES_SAMPLER_ARG: optionalString,
  OTEL_BSP_MAX_QUEUE_SIZE: positiveInt.max(1_000_000).default(2048),
  OTEL_BSP_SCHEDULE_DELAY: positiveInt.max(600_000).default(5000),
  OTEL_BSP_EXPORT_TIMEOUT: positiveInt.max(600_000).default(10_000),
  /** Comma-separated paths of modules whose `tools` export adds tools to the registry (self-hosted extensions). */
  TOOL_MODULES: optionalString,
});

export type Env = z.input<typeof envSchema>;
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(source: Record<string, string | undefined> = process.env) {
  // An empty variable means "unset", as in most shells' `VAR= command`.
  const env = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid environment: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  const isProduction = e.NODE_ENV === 'production';
  const missing = isProduction ? (['ENCRYPTION_MASTER_KEY', 'APP_HOST', 'API_HOST'] as const).filter((name) => !e[name]) : [];
  if (missing.length > 0) {
    const names = `variable${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`;
    throw new ConfigError(`Missing required environment ${names} (required when NODE_ENV=production)`);
  }
  const notices: string[] = [];
  // npm runs workspace scripts inside server/; relative paths mean the directory npm was run from.
  const dataDir = resolve(env.INIT_CWD ?? process.cwd(), e.DATA_DIR);
  const defaultOrigin = `http://localhost:${e.PORT}`;
  const origin = (url: string) => new URL(url).origin;
  const apiHost = origin(e.API_HOST ?? defaultOrigin);

  return Object.freeze({
    env: e.NODE_ENV,
    isProduction,
    host: e.HOST ?? (isProduction ? '0.0.0.0' : '127.0.0.1'),
    port: e.PORT,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    dataDir,
    masterKey: e.ENCRYPTION_MASTER_KEY ?? developmentMasterKey(dataDir, notices),
    appHost: origin(e.APP_HOST ?? defaultOrigin),
    apiHost,
    logLevel: e.LOG_LEVEL,
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    runWorkers: e.RUN_WORKERS,
    shutdownGraceMs: e.SHUTDOWN_GRACE_SECONDS * 1000,
    worker: { niceness: e.WORKER_NICENESS, databasePoolSize: e.WORKER_DATABASE_POOL_SIZE },
    http: {
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_SECONDS * 1000,
      requestTimeoutMs: Math.max(e.HTTP_REQUEST_TIMEOUT_SECONDS, e.HTTP_HEADERS_TIMEOUT_SECONDS) * 1000,
    },
    codehost:
      e.CODEHOST_CLIENT_ID && e.CODEHOST_CLIENT_SECRET
        ? {
            clientId: e.CODEHOST_CLIENT_ID,
            clientSecret: e.CODEHOST_CLIENT_SECRET,
            authorizeUrl: e.CODEHOST_AUTHORIZE_URL,
            tokenUrl: e.CODEHOST_TOKEN_URL,
            apiUrl: e.CODEHOST_API_URL.replace(/\/$/, ''),
            redirectUri: `${apiHost}/auth/codehost/callback`,
          }
        : null,
    idp:
      e.IDP_CLIENT_ID && e.IDP_CLIENT_SECRET
        ? {
            clientId: e.IDP_CLIENT_ID,
            clientSecret: e.IDP_CLIENT_SECRET,
            issuer: e.IDP_ISSUER,
            scopes: e.IDP_SCOPES,
            redirectUri: `${apiHost}/auth/idp/callback`,
          }
        : null,
    externalAuth: {
      defaultProvider: e.EXTERNAL_AUTH_DEFAULT_PROVIDER,
      jwt: e.EXTERNAL_JWT_JWKS_URL
        ? {
            name: e.EXTERNAL_JWT_PROVIDER_NAME,
            issuer: e.EXTERNAL_JWT_ISSUER,
            jwksUrl: e.EXTERNAL_JWT_JWKS_URL,
            audience: e.EXTERNAL_JWT_AUDIENCE,
            claims: {
              userId: e.EXTERNAL_JWT_USER_ID_CLAIM,
              email: e.EXTERNAL_JWT_EMAIL_CLAIM,
              firstName: e.EXTERNAL_JWT_FIRST_NAME_CLAIM,
              lastName: e.EXTERNAL_JWT_LAST_NAME_CLAIM,
              isAdmin: e.EXTERNAL_JWT_ADMIN_CLAIM,
            },
          }
        : null,
    },
    mail: { smtpUrl: e.SMTP_URL, apiKey: e.MAIL_API_KEY, apiUrl: e.MAIL_API_URL.replace(/\/$/, ''), from: e.MAIL_FROM },
    mailApi: { baseUrl: e.MAIL_API_URL, timeoutMs: e.MAIL_API_TIMEOUT_SECONDS * 1000, retries: e.MAIL_API_RETRIES },
    slackApi: { baseUrl: e.SLACK_API_URL.replace(/\/?$/, '/'), timeoutMs: e.SLACK_API_TIMEOUT_SECONDS * 1000 },
    email: {
      webhookMaxBytes: e.EMAIL_WEBHOOK_MAX_BYTES,
      maxAttachmentBytes: e.EMAIL_MAX_ATTACHMENT_BYTES,
      maxAttachments: e.EMAIL_MAX_ATTACHMENTS,
      maxRecipients: e.EMAIL_MAX_RECIPIENTS,
      autoRepliesPerThreadPerHour: e.EMAIL_AUTO_REPLIES_PER_THREAD_PER_HOUR,
      leaseMs: e.EMAIL_PROCESSING_LEASE_SECONDS * 1000,
      concurrency: e.EMAIL_CONCURRENCY,
      batchWindowMs: e.EMAIL_BATCH_WINDOW_MS,
    },
    sessionCacheTtlMs: e.SESSION_CACHE_TTL_SECONDS * 1000,
    passwordHashCost: e.PASSWORD_HASH_COST,
    rateLimit: {
      redisUrl: e.RATE_LIMIT_REDIS_URL,
      authPerMinute: e.AUTH_RATE_LIMIT_PER_MINUTE,
      webhookIpPerMinute: e.WEBHOOK_IP_RATE_LIMIT_PER_MINUTE,
    },
    ingestWriteConcurrency: e.INGEST_WRITE_CONCURRENCY,
    ingestMaxPendingBodies: e.INGEST_MAX_PENDING_BODIES,
    messageIdRetentionMs: e.WEBHOOK_MESSAGE_ID_RETENTION_HOURS * 60 * 60 * 1000,
    model: {
      provider: e.MODEL_PROVIDER,
      baseUrl: e.MODEL_BASE_URL,
      apiKey: e.MODEL_API_KEY,
      name: e.MODEL_NAME,
      timeoutMs: e.MODEL_TIMEOUT_SECONDS * 1000,
      maxRetries: e.MODEL_MAX_RETRIES,
      prices: e.MODEL_PRICES ?? (new Map() as ModelPrices),
    },
    jobs: { pollMs: e.JOB_POLL_SECONDS * 1000, heartbeatSeconds: e.JOB_HEARTBEAT_SECONDS },
    actions: { maxSteps: e.ACTION_MAX_STEPS, leaseMs: e.ACTION_LEASE_SECONDS * 1000, concurrency: e.ACTION_CONCURRENCY },
    experiments: { concurrency: e.EXPERIMENT_CONCURRENCY },
    callbacks: {
      allowPrivateNetworks: e.CALLBACK_ALLOW_PRIVATE_NETWORKS,
      timeoutMs: e.CALLBACK_TIMEOUT_SECONDS * 1000,
      retryScheduleMs: e.CALLBACK_RETRY_SCHEDULE.split(',').map((seconds) => Math.round(Number(seconds) * 1000)),
      concurrency: e.CALLBACK_CONCURRENCY,
    },
    mcp: {
      allowPrivateNetworks: e.MCP_ALLOW_PRIVATE_NETWORKS,
      connectTimeoutMs: e.MCP_CONNECT_TIMEOUT_SECONDS * 1000,
      callTimeoutMs: e.MCP_CALL_TIMEOUT_SECONDS * 1000,
      maxResultBytes: e.MCP_MAX_RESULT_BYTES,
    },
    userLimits: { cacheTtlMs: e.USER_LIMITS_CACHE_SECONDS * 1000, providerTimeoutMs: e.USER_LIMITS_TIMEOUT_SECONDS * 1000 },
    documents: {
      renderTimeoutMs: e.DOCUMENT_RENDER_TIMEOUT_SECONDS * 1000,
      renderThreads: e.DOCUMENT_RENDER_THREADS ?? Math.min(4, Math.max(1, availableParallelism() - 1)),
    },
    toolModules: toolModulePaths(e.TOOL_MODULES, env.INIT_CWD ?? process.cwd()),
    tracing: tracingConfig(e, notices),
    notices: Object.freeze(notices),
  });
}

export type Config = ReturnType<typeof loadConfig>;
