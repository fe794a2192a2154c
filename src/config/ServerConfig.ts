import { Context, Either, LogLevel, Redacted, Schema } from "effect"
import { readFileSync } from "node:fs"
import { hostname } from "node:os"
import { type ModelSettings, resolveModelSettings } from "./ModelSettings.js"
import { AuthConfigFile, type AuthSettings } from "./AuthSettings.js"
import { DEFAULT_DATABASE_URL } from "../storage/Sql.js"

export const DEFAULT_PORT = 3141
export const DEFAULT_BODY_LIMIT = 10 * 1024 * 1024

const InstanceId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9._:-]{1,100}$/, { message: () => "must be 1 to 100 letters, digits or . _ : -" })
)

const Port = Schema.Int.pipe(Schema.between(0, 65535, { message: () => "must be an integer from 0 to 65535" }))

export const CorsConfig = Schema.Struct({
  allowedOrigins: Schema.optional(Schema.Array(Schema.String)),
  allowedHeaders: Schema.optional(Schema.Array(Schema.String)),
  credentials: Schema.optional(Schema.Boolean),
  maxAge: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
})

const RetentionLimits = Schema.Struct({
  maxCount: Schema.optional(Schema.Int.pipe(Schema.positive())),
  maxAgeHours: Schema.optional(Schema.Number.pipe(Schema.positive()))
})

/** The config file (`--config file.json`): every field optional, unknown fields rejected. */
export const ConfigFile = Schema.Struct({
  port: Schema.optional(Port),
  host: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  bodyLimit: Schema.optional(Schema.Int.pipe(Schema.positive())),
  enableSwaggerUI: Schema.optional(Schema.Boolean),
  cors: Schema.optional(Schema.Union(Schema.Literal(false), CorsConfig)),
  storage: Schema.optional(Schema.Struct({ url: Schema.String.pipe(Schema.minLength(1)) })),
  auth: Schema.optional(AuthConfigFile),
  instanceId: Schema.optional(InstanceId),
  observability: Schema.optional(Schema.Struct({
    maxTraces: Schema.optional(Schema.Int.pipe(Schema.positive())),
    maxAgeHours: Schema.optional(Schema.Number.pipe(Schema.positive())),
    maxLogs: Schema.optional(Schema.Int.pipe(Schema.positive())),
    logMaxAgeHours: Schema.optional(Schema.Number.pipe(Schema.positive())),
    recordContent: Schema.optional(Schema.Boolean)
  })),
  retention: Schema.optional(Schema.Struct({
    executions: Schema.optional(RetentionLimits),
    conversations: Schema.optional(RetentionLimits)
  })),
  workflows: Schema.optional(Schema.Struct({
    leaseSeconds: Schema.optional(Schema.Number.pipe(Schema.positive())),
    pollMs: Schema.optional(Schema.Int.pipe(Schema.positive())),
    drainSeconds: Schema.optional(Schema.Number.pipe(Schema.nonNegative())),
    idempotencyKeyHours: Schema.optional(Schema.Number.pipe(Schema.positive()))
  }))
})
export type ConfigFile = typeof ConfigFile.Type

export interface ServerConfigShape {
  readonly port: number
  readonly host: string
  readonly bodyLimit: number
  readonly enableSwaggerUI: boolean
  readonly cors: false | typeof CorsConfig.Type
  readonly databaseUrl: string
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

/**
 * Fills in the defaults; `production` follows NODE_ENV and turns Swagger UI off unless asked for.
 * Throws when the model variables are wrong (the command line reports that as a StartupError first).
 */
export const resolveServerConfig = (
  file: ConfigFile = {},
  env: Readonly<Record<string, string | undefined>> = {}
): ServerConfigShape => {
  const production = env.NODE_ENV === "production"
  return {
    port: file.port ?? DEFAULT_PORT,
    host: file.host ?? "127.0.0.1",
    bodyLimit: file.bodyLimit ?? DEFAULT_BODY_LIMIT,
    enableSwaggerUI: file.enableSwaggerUI ?? !production,
    cors: file.cors ?? {},
    databaseUrl: env.DATABASE_URL ?? file.storage?.url ?? DEFAULT_DATABASE_URL,
    production,
    logLevel: parseLogLevel(env.LOG_LEVEL),
    logFormat: parseLogFormat(env.LOG_FORMAT),
    model: Either.getOrThrowWith(resolveModelSettings(env), (message) => new Error(message)),
    auth: resolveAuth(file.auth, env, production),
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
    metricExportIntervalMs: positive(env, "OTEL_METRIC_EXPORT_INTERVAL"),
    retention: {
      maxTraces: file.observability?.maxTraces ?? 10_000,
      maxAgeMs: (file.observability?.maxAgeHours ?? 7 * 24) * 3600 * 1000
    },
    logRetention: {
      maxEntries: file.observability?.maxLogs ?? 100_000,
      maxAgeMs: (file.observability?.logMaxAgeHours ?? 7 * 24) * 3600 * 1000
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
    recordContent: booleanFrom(env, "OBSERVABILITY_RECORD_CONTENT") ?? file.observability?.recordContent ?? false,
    instanceId: instanceIdFrom(env.SERVICE_INSTANCE_ID) ?? file.instanceId ?? defaultInstanceId(),
    workflows: {
      leaseMs: seconds(env, "WORKFLOW_LEASE_SECONDS") ?? (file.workflows?.leaseSeconds ?? 15) * 1000,
      pollMs: positive(env, "WORKFLOW_POLL_MS") ?? file.workflows?.pollMs ?? 1_000,
      drainMs: seconds(env, "SHUTDOWN_GRACE_SECONDS", true) ?? (file.workflows?.drainSeconds ?? 10) * 1000,
      idempotencyTtlMs: (positive(env, "IDEMPOTENCY_KEY_HOURS") ?? file.workflows?.idempotencyKeyHours ?? 24) * 3600 * 1000
    }
  }
}

/** A positive number from the environment; throws (a start-up error) when set but not one. */
const positive = (env: Readonly<Record<string, string | undefined>>, name: string, zero = false): number | undefined => {
  const raw = env[name]
  if (raw === undefined || raw === "") return undefined
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0 || (!zero && value === 0)) {
    throw new Error(`${name}: must be a ${zero ? "non-negative" : "positive"} number, got "${raw}"`)
  }
  return value
}

/** true/false (or 1/0) from the environment; throws (a start-up error) when set to anything else. */
const booleanFrom = (env: Readonly<Record<string, string | undefined>>, name: string): boolean | undefined => {
  const raw = env[name]
  if (raw === undefined || raw === "") return undefined
  if (raw === "true" || raw === "1") return true
  if (raw === "false" || raw === "0") return false
  throw new Error(`${name}: must be true or false, got "${raw}"`)
}

const seconds = (env: Readonly<Record<string, string | undefined>>, name: string, zero = false) => {
  const value = positive(env, name, zero)
  return value === undefined ? undefined : value * 1000
}

const instanceIdFrom = (raw: string | undefined): string | undefined => {
  if (raw === undefined || raw === "") return undefined
  return Either.getOrThrowWith(
    Schema.decodeUnknownEither(InstanceId)(raw),
    () => new Error(`SERVICE_INSTANCE_ID: must be 1 to 100 letters, digits or . _ : -, got "${raw}"`)
  )
}

const defaultInstanceId = () =>
  `${hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 60)}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`

/**
 * JWT from the config file's `auth` (secret or publicKeyFile) or JWT_SECRET; the console key from
 * SERVICE_CONSOLE_ACCESS_KEY. Throws when `auth` names no key or the key file cannot be read.
 */
const resolveAuth = (
  auth: ConfigFile["auth"],
  env: Readonly<Record<string, string | undefined>>,
  production: boolean
): AuthSettings => {
  const secret = auth?.publicKeyFile !== undefined
    ? readFileSync(auth.publicKeyFile, "utf8")
    : auth?.secret ?? env.JWT_SECRET
  if (auth !== undefined && secret === undefined) throw new Error("auth: needs secret or publicKeyFile (or JWT_SECRET)")
  // An empty secret would turn authentication on and then refuse every token.
  if (secret === "") throw new Error("JWT_SECRET is empty: unset it to run without authentication, or give it a secret")
  const consoleKey = env.SERVICE_CONSOLE_ACCESS_KEY ? Redacted.make(env.SERVICE_CONSOLE_ACCESS_KEY) : undefined
  if (secret === undefined) return { production, consoleKey }
  return {
    production,
    consoleKey,
    jwt: {
      secret: Redacted.make(secret),
      defaultPrivate: auth?.defaultPrivate ?? false,
      publicRoutes: auth?.publicRoutes ?? [],
      admin: auth?.admin,
      algorithms: auth?.verifyOptions?.algorithms,
      audience: auth?.verifyOptions?.audience,
      issuer: auth?.verifyOptions?.issuer
    }
  }
}

const LOG_LEVELS: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
  silent: LogLevel.None
}

export type LogFormat = "pretty" | "logfmt" | "json"

/** LOG_FORMAT (pretty, logfmt, json); undefined (chosen by the terminal) when unset or unknown. */
export const parseLogFormat = (value: string | undefined): LogFormat | undefined => {
  const format = (value ?? "").toLowerCase()
  return format === "pretty" || format === "logfmt" || format === "json" ? format : undefined
}

/** LOG_LEVEL (trace, debug, info, warn, error, fatal, none); info when unset or unknown. */
export const parseLogLevel = (value: string | undefined): LogLevel.LogLevel =>
  LOG_LEVELS[(value ?? "").toLowerCase()] ?? LogLevel.Info
