import { Config, Context, Either, type LogLevel, Option, Redacted, Schema } from "effect"
import { hostname } from "node:os"
import { DEFAULT_DATABASE_URL } from "../storage/Sql.js"
import { type AgentLimits, agentLimitsEnvironment, resolveAgentLimits } from "./AgentSettings.js"
import { type AuthSettings, resolveAuth } from "./AuthSettings.js"
import { type ConfigFile, type CorsConfig, InstanceId, PROVIDER_OPTION, publicUrlProblem } from "./ConfigFile.js"
import { type Env, parsed, readEnv, secret, variable } from "./env.js"
import { type LogFormat, parseLogFormat, parseLogLevel } from "./LogSettings.js"
import { type ModelSettings, modelSettingsConfig } from "./ModelSettings.js"
import { resolveScheduleSettings, scheduleInputMaxBytesFrom, type ScheduleSettings } from "./ScheduleSettings.js"
import { resolveWebhookSettings, webhookEnvironment, type WebhookSettings } from "./WebhookSettings.js"

export { ConfigFile, CorsConfig, publicUrlProblem } from "./ConfigFile.js"
export { type LogFormat, parseLogFormat, parseLogLevel } from "./LogSettings.js"

export const DEFAULT_PORT = 3141
export const DEFAULT_BODY_LIMIT = 10 * 1024 * 1024

export interface ServerConfigShape {
  readonly port: number
  readonly host: string
  readonly bodyLimit: number
  readonly enableSwaggerUI: boolean
  readonly cors: false | typeof CorsConfig.Type
  /** Redacted: a Postgres URL can carry a password. */
  readonly databaseUrl: Redacted.Redacted<string>
  readonly production: boolean
  readonly logLevel: LogLevel.LogLevel
  /**
   * How `node dist/main.js` prints log lines (LOG_FORMAT: pretty, logfmt or json); unset: pretty on a
   * terminal, logfmt (one line each, for log collectors) otherwise.
   */
  readonly logFormat?: LogFormat | undefined
  /** The model agents use unless they name their own (AI_PROVIDER, AI_MODEL, AI_BASE_URL, AI_API_KEY). */
  readonly model: ModelSettings
  readonly auth: AuthSettings
  /** How many traces, and how old, the TraceStore keeps. */
  readonly retention: { readonly maxTraces: number; readonly maxAgeMs: number }
  /** How many log entries, and how old, the LogStore keeps. */
  readonly logRetention: { readonly maxEntries: number; readonly maxAgeMs: number }
  /**
   * How long finished workflow executions (with their events) and agent memory and history are kept
   * (RecordRetention applies it in the background).
   */
  readonly recordRetention: RecordRetentionSettings
  /**
   * Whether model spans keep prompts and completions (`observability.recordContent` or
   * OBSERVABILITY_RECORD_CONTENT=true); off, they keep lengths and token counts only.
   */
  readonly recordContent: boolean
  /**
   * Whether the service's own console and explorer reads (GET /observability/*, /api/logs, /metrics,
   * /doc, the console's and /ui's pages) are traced (`observability.traceConsoleReads` or
   * TRACE_CONSOLE_READS=true); off (or unset) they are not.
   */
  readonly traceConsoleReads?: boolean | undefined
  /** OTEL_EXPORTER_OTLP_ENDPOINT: also export spans and metrics there over OTLP/HTTP. */
  readonly otlpEndpoint?: string | undefined
  /** OTEL_METRIC_EXPORT_INTERVAL: milliseconds between two OTLP metric exports (60,000). */
  readonly metricExportIntervalMs?: number | undefined
  /**
   * This process among the instances sharing one store (SERVICE_INSTANCE_ID; by default the host name,
   * the process id and a random suffix): it owns the executions it runs, and names its log entries.
   */
  readonly instanceId: string
  readonly workflows: WorkflowSettings
  /**
   * The keys of a call's `options.providerOptions` that reach the provider, as `provider.key`
   * (PROVIDER_OPTIONS_ALLOW, comma-separated, or `agents.providerOptionsAllow`); none by default: any
   * other key is a 400, and provider options inside a caller's messages are dropped unless listed.
   */
  readonly providerOptionsAllow: ReadonlyArray<string>
  /** Tool approvals wait APPROVAL_TTL seconds (`agents.approvalTtlSeconds`; 24 h); APPROVAL_SECRET signs them (the AI SDK's). */
  readonly approvals?: { readonly ttlMs: number; readonly secret?: Redacted.Redacted<string> | undefined } | undefined
  /** Bounds of agent calls, in bytes (the defaults when absent). */
  readonly agentLimits?: AgentLimits | undefined
  /** The `schedules` section and SCHEDULE_INPUT_MAX_BYTES (see ScheduleSettings.ts). */
  readonly schedules?: ScheduleSettings | undefined
  /** Completion callbacks (`webhooks`, WEBHOOK_*; see WebhookSettings.ts): the defaults when absent, no callbacks. */
  readonly webhooks?: WebhookSettings | undefined
  readonly http: HttpSettings
  /**
   * Where clients reach the service (SERVICE_PUBLIC_URL or `publicUrl`; http or https), for the URLs it
   * states about itself (the A2A card); unset: the listening address.
   */
  readonly publicUrl?: string | undefined
}

/** Node's HTTP server bounds (the `http` section of the config file, or HTTP_* variables). */
export interface HttpSettings {
  /** A request's headers must arrive within this long (HTTP_HEADERS_TIMEOUT_SECONDS, 10 s), else 408. */
  readonly headersTimeoutMs: number
  /** The whole request, body included, within this long (HTTP_REQUEST_TIMEOUT_SECONDS, 60 s), else 408. */
  readonly requestTimeoutMs: number
  /**
   * Open connections from one remote address (HTTP_MAX_CONNECTIONS_PER_CLIENT, 256; 0: no cap); one
   * more is answered 503 and closed. Loopback peers are not counted (a proxy on this host is many clients).
   */
  readonly maxConnectionsPerClient: number
}

export interface WorkflowSettings {
  /** An owner that stops renewing loses its executions after this long (WORKFLOW_LEASE_SECONDS, 15 s). */
  readonly leaseMs: number
  /**
   * How often an instance renews its lease, checks the executions it runs against the store and
   * claims orphaned ones (WORKFLOW_POLL_MS, 1,000 ms): the bound on a lost notification.
   */
  readonly pollMs: number
  /** On SIGTERM, how long running steps may take to finish before their executions are handed over (SHUTDOWN_GRACE_SECONDS, 10 s). */
  readonly drainMs: number
  /** How long an Idempotency-Key is remembered (IDEMPOTENCY_KEY_HOURS, 24 h). */
  readonly idempotencyTtlMs: number
  /** Executions one owner may have queued on one concurrency key; a start past it is a 429 (WORKFLOW_MAX_QUEUED_PER_KEY, 1,000). */
  readonly maxQueuedPerKey: number
  /** What one execution may store: events, inner step outputs, value rows (WORKFLOW_MAX_EXECUTION_BYTES, 32 MiB; issue #42). */
  readonly maxExecutionBytes: number
  /** How long `/execute` holds a request for an execution that parks before answering 202 (EXECUTE_WAIT_SECONDS, 30 s). */
  readonly executeWaitMs: number
  /** Whole execution records (GET /workflows/executions/:executionId) sent at a time per caller (WORKFLOW_RECORD_READS_PER_OWNER, 4). */
  readonly recordReadsPerOwner: number
}

export interface RetentionLimit {
  /** Rows kept at most (the oldest go first); no limit when undefined. */
  readonly maxCount: number | undefined
  readonly maxAgeMs: number
}

export interface RecordRetentionSettings {
  /** Finished executions (completed, error, cancelled) by when they ended; suspended and running ones are never pruned. */
  readonly executions: RetentionLimit
  /** Conversation messages and history entries, each by when it was written (maxCount applies to each table). */
  readonly conversations: RetentionLimit
}

const HOUR_MS = 3600 * 1000

export class ServerConfig extends Context.Tag("ServerConfig")<ServerConfig, ServerConfigShape>() {}

const isPositive = (zero: boolean) => (raw: string): Either.Either<number, string> => {
  const value = Number(raw)
  return Number.isFinite(value) && value >= 0 && (zero || value !== 0)
    ? Either.right(value)
    : Either.left(`must be a ${zero ? "non-negative" : "positive"} number, got "${raw}"`)
}

const named = <A>(name: string, parse: (raw: string) => Either.Either<A, string>) =>
  parsed(name, (raw) => Either.mapLeft(parse(raw), (problem) => `${name}: ${problem}`))

/** A positive number from the environment (non-negative with `zero`); set but not one fails start-up. */
const positive = (name: string, zero = false) => named(name, isPositive(zero))

/** A positive integer from the environment; set but not one fails start-up. */
const positiveInteger = (name: string) =>
  named(
    name,
    (raw) =>
      /^[1-9]\d*$/.test(raw) ? Either.right(Number(raw)) : Either.left(`must be a positive integer, got "${raw}"`)
  )

/** true/false (or 1/0) from the environment; anything else fails start-up. */
const booleanFrom = (name: string) =>
  named(name, (raw) =>
    raw === "true" || raw === "1"
      ? Either.right(true)
      : raw === "false" || raw === "0"
      ? Either.right(false)
      : Either.left(`must be true or false, got "${raw}"`))

const instanceIdFrom = named(
  "SERVICE_INSTANCE_ID",
  (raw) =>
    Either.mapLeft(
      Schema.decodeUnknownEither(InstanceId)(raw),
      () => `must be 1 to 100 letters, digits or . _ : -, got "${raw}"`
    )
)

const defaultInstanceId = () =>
  `${hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 60)}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`

const providerOptionsFrom = named("PROVIDER_OPTIONS_ALLOW", (raw) => {
  const names = raw.split(",").map((name) => name.trim()).filter((name) => name !== "")
  const wrong = names.find((name) => !PROVIDER_OPTION.test(name))
  return wrong === undefined
    ? Either.right(names)
    : Either.left(`each entry must be provider.key (e.g. openai.reasoningEffort), got "${wrong.slice(0, 100)}"`)
})

const seconds = Option.map((value: number) => value * 1000)

/** What the service reads from the environment (every variable in `--help` and .env.example). */
const environment = Config.all({
  production: Config.map(variable("NODE_ENV"), (value) => Option.getOrUndefined(value) === "production"),
  databaseUrl: secret("DATABASE_URL"),
  logLevel: variable("LOG_LEVEL"),
  logFormat: variable("LOG_FORMAT"),
  model: modelSettingsConfig,
  jwtSecret: secret("JWT_SECRET"),
  jwtAllowNoExp: booleanFrom("JWT_ALLOW_NO_EXP"),
  consoleKey: secret("SERVICE_CONSOLE_ACCESS_KEY"),
  otlpEndpoint: variable("OTEL_EXPORTER_OTLP_ENDPOINT"),
  metricExportIntervalMs: positive("OTEL_METRIC_EXPORT_INTERVAL"),
  recordContent: booleanFrom("OBSERVABILITY_RECORD_CONTENT"),
  traceConsoleReads: booleanFrom("TRACE_CONSOLE_READS"),
  instanceId: instanceIdFrom,
  leaseMs: Config.map(positive("WORKFLOW_LEASE_SECONDS"), seconds),
  pollMs: positive("WORKFLOW_POLL_MS"),
  drainMs: Config.map(positive("SHUTDOWN_GRACE_SECONDS", true), seconds),
  idempotencyKeyHours: positive("IDEMPOTENCY_KEY_HOURS"),
  maxQueuedPerKey: positiveInteger("WORKFLOW_MAX_QUEUED_PER_KEY"),
  maxExecutionBytes: positiveInteger("WORKFLOW_MAX_EXECUTION_BYTES"),
  executeWaitMs: Config.map(positive("EXECUTE_WAIT_SECONDS", true), seconds),
  recordReadsPerOwner: positive("WORKFLOW_RECORD_READS_PER_OWNER"),
  providerOptionsAllow: providerOptionsFrom,
  approvalTtlMs: Config.map(positive("APPROVAL_TTL"), seconds),
  approvalSecret: secret("APPROVAL_SECRET"),
  agentLimits: agentLimitsEnvironment,
  headersTimeoutMs: Config.map(positive("HTTP_HEADERS_TIMEOUT_SECONDS"), seconds),
  requestTimeoutMs: Config.map(positive("HTTP_REQUEST_TIMEOUT_SECONDS"), seconds),
  maxConnectionsPerClient: named(
    "HTTP_MAX_CONNECTIONS_PER_CLIENT",
    (raw) => /^\d+$/.test(raw) ? Either.right(Number(raw)) : Either.left(`must be a non-negative integer, got "${raw}"`)
  ),
  publicUrl: named(
    "SERVICE_PUBLIC_URL",
    (raw) => Either.fromNullable(publicUrlProblem(raw), () => raw).pipe(Either.flip)
  ),
  scheduleInputMaxBytes: scheduleInputMaxBytesFrom,
  webhooks: webhookEnvironment
})

/**
 * The configuration from the config file and the environment (the environment wins): the defaults
 * filled in; `production` follows NODE_ENV and turns Swagger UI off unless asked for.
 */
export const serverConfig = (file: ConfigFile = {}): Config.Config<ServerConfigShape> =>
  Config.mapOrFail(
    environment,
    (env) =>
      Either.flatMap(resolveAuth(file.auth, env), (auth) =>
        Either.map(resolveWebhookSettings(file.webhooks, env.webhooks), (webhooks): ServerConfigShape => ({
          port: file.port ?? DEFAULT_PORT,
          host: file.host ?? "127.0.0.1",
          bodyLimit: file.bodyLimit ?? DEFAULT_BODY_LIMIT,
          enableSwaggerUI: file.enableSwaggerUI ?? !env.production,
          cors: file.cors ?? {},
          databaseUrl: Option.getOrElse(env.databaseUrl, () =>
            Redacted.make(file.storage?.url ?? DEFAULT_DATABASE_URL)),
          production: env.production,
          logLevel: parseLogLevel(Option.getOrUndefined(env.logLevel)),
          logFormat: parseLogFormat(Option.getOrUndefined(env.logFormat)),
          model: env.model,
          auth,
          otlpEndpoint: Option.getOrUndefined(env.otlpEndpoint) || undefined,
          metricExportIntervalMs: Option.getOrUndefined(env.metricExportIntervalMs),
          retention: {
            maxTraces: file.observability?.maxTraces ?? 10_000,
            maxAgeMs: (file.observability?.maxAgeHours ?? 7 * 24) * HOUR_MS
          },
          logRetention: {
            maxEntries: file.observability?.maxLogs ?? 100_000,
            maxAgeMs: (file.observability?.logMaxAgeHours ?? 7 * 24) * HOUR_MS
          },
          recordRetention: {
            executions: {
              maxCount: file.retention?.executions?.maxCount ?? 100_000,
              maxAgeMs: (file.retention?.executions?.maxAgeHours ?? 30 * 24) * HOUR_MS
            },
            conversations: {
              maxCount: file.retention?.conversations?.maxCount,
              maxAgeMs: (file.retention?.conversations?.maxAgeHours ?? 90 * 24) * HOUR_MS
            }
          },
          recordContent: Option.getOrElse(env.recordContent, () =>
            file.observability?.recordContent ?? false),
          traceConsoleReads: Option.getOrElse(env.traceConsoleReads, () =>
            file.observability?.traceConsoleReads ?? false),
          instanceId: Option.getOrElse(env.instanceId, () =>
            file.instanceId ?? defaultInstanceId()),
          workflows: {
            leaseMs: Option.getOrElse(env.leaseMs, () =>
              (file.workflows?.leaseSeconds ?? 15) * 1000),
            pollMs: Option.getOrElse(env.pollMs, () =>
              file.workflows?.pollMs ?? 1_000),
            drainMs: Option.getOrElse(env.drainMs, () => (file.workflows?.drainSeconds ?? 10) * 1000),
            idempotencyTtlMs: Option.getOrElse(env.idempotencyKeyHours, () =>
              file.workflows?.idempotencyKeyHours ?? 24) * HOUR_MS,
            maxQueuedPerKey: Option.getOrElse(env.maxQueuedPerKey, () => file.workflows?.maxQueuedPerKey ?? 1_000),
            maxExecutionBytes: Option.getOrElse(
              env.maxExecutionBytes,
              () => file.workflows?.maxExecutionBytes ?? 32 * 1024 * 1024
            ),
            executeWaitMs: Option.getOrElse(env.executeWaitMs, () => (file.workflows?.executeWaitSeconds ?? 30) * 1000),
            recordReadsPerOwner: Option.getOrElse(
              env.recordReadsPerOwner,
              () => file.workflows?.recordReadsPerOwner ?? 4
            )
          },
          providerOptionsAllow: Option.getOrElse(
            env.providerOptionsAllow,
            () => file.agents?.providerOptionsAllow ?? []
          ),
          agentLimits: resolveAgentLimits(file.agents, env.agentLimits),
          schedules: resolveScheduleSettings(file.schedules, env.scheduleInputMaxBytes),
          approvals: {
            ttlMs: Option.getOrElse(env.approvalTtlMs, () => (file.agents?.approvalTtlSeconds ?? 24 * 3600) * 1000),
            secret: Option.getOrUndefined(env.approvalSecret)
          },
          http: {
            headersTimeoutMs: Option.getOrElse(
              env.headersTimeoutMs,
              () => (file.http?.headersTimeoutSeconds ?? 10) * 1000
            ),
            requestTimeoutMs: Option.getOrElse(
              env.requestTimeoutMs,
              () => (file.http?.requestTimeoutSeconds ?? 60) * 1000
            ),
            maxConnectionsPerClient: Option.getOrElse(
              env.maxConnectionsPerClient,
              () => file.http?.maxConnectionsPerClient ?? 256
            )
          },
          publicUrl: Option.getOrUndefined(env.publicUrl) ?? file.publicUrl,
          webhooks
        })))
  )

/** `serverConfig(file)` read from an environment record; throws with the reason when a variable is wrong (the CLI reports a StartupError first). */
export const resolveServerConfig = (file: ConfigFile = {}, env: Env = {}): ServerConfigShape =>
  Either.getOrThrowWith(readEnv(serverConfig(file), env), (message) => new Error(message))
