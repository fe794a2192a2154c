import { Context, Either, LogLevel, Schema } from "effect"
import { readFileSync } from "node:fs"
import { type ModelSettings, resolveModelSettings } from "../agents/models/ModelSettings.js"
import { AuthConfigFile, type AuthSettings } from "../auth/AuthSettings.js"
import { DEFAULT_DATABASE_URL } from "../storage/Sql.js"

export const DEFAULT_PORT = 3141
export const DEFAULT_BODY_LIMIT = 10 * 1024 * 1024

const Port = Schema.Int.pipe(Schema.between(0, 65535, { message: () => "must be an integer from 0 to 65535" }))

export const CorsConfig = Schema.Struct({
  allowedOrigins: Schema.optional(Schema.Array(Schema.String)),
  allowedHeaders: Schema.optional(Schema.Array(Schema.String)),
  credentials: Schema.optional(Schema.Boolean),
  maxAge: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
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
  observability: Schema.optional(Schema.Struct({
    maxTraces: Schema.optional(Schema.Int.pipe(Schema.positive())),
    maxAgeHours: Schema.optional(Schema.Number.pipe(Schema.positive()))
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
  /** The model agents use unless they name their own (AI_PROVIDER, AI_MODEL, AI_BASE_URL, AI_API_KEY). */
  readonly model: ModelSettings
  readonly auth: AuthSettings
  /** How many traces, and how old, the TraceStore keeps. */
  readonly retention: { readonly maxTraces: number; readonly maxAgeMs: number }
  /** OTEL_EXPORTER_OTLP_ENDPOINT: also export spans there over OTLP/HTTP. */
  readonly otlpEndpoint?: string | undefined
}

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
    model: Either.getOrThrowWith(resolveModelSettings(env), (message) => new Error(message)),
    auth: resolveAuth(file.auth, env, production),
    otlpEndpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined,
    retention: {
      maxTraces: file.observability?.maxTraces ?? 10_000,
      maxAgeMs: (file.observability?.maxAgeHours ?? 7 * 24) * 3600 * 1000
    }
  }
}

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
  const consoleKey = env.SERVICE_CONSOLE_ACCESS_KEY || undefined
  if (secret === undefined) return { production, consoleKey }
  return {
    production,
    consoleKey,
    jwt: {
      secret,
      defaultPrivate: auth?.defaultPrivate ?? false,
      publicRoutes: auth?.publicRoutes ?? [],
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

/** LOG_LEVEL (trace, debug, info, warn, error, fatal, none); info when unset or unknown. */
export const parseLogLevel = (value: string | undefined): LogLevel.LogLevel =>
  LOG_LEVELS[(value ?? "").toLowerCase()] ?? LogLevel.Info
