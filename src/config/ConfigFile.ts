import { Schema } from "effect"
import { AuthConfigFile } from "./AuthSettings.js"
import { SchedulesConfigFile } from "./ScheduleSettings.js"
import { WebhooksConfigFile } from "./WebhookSettings.js"

/**
 * The config file's schema (`--config file.json`): every field optional, unknown fields rejected. What
 * each field means, and its variable, is ServerConfig's; the sections of auth, schedules and webhooks are
 * their settings' own.
 */

export const InstanceId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9._:-]{1,100}$/, { message: () => "must be 1 to 100 letters, digits or . _ : -" })
)

/** `provider.key`, as a call's `options.providerOptions` names it (e.g. `openai.reasoningEffort`). */
export const PROVIDER_OPTION = /^[^.\s]{1,100}\.[^\s]{1,100}$/

const ProviderOptionName = Schema.String.pipe(
  Schema.pattern(PROVIDER_OPTION, { message: () => "must be provider.key, e.g. openai.reasoningEffort" })
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
    recordContent: Schema.optional(Schema.Boolean),
    traceConsoleReads: Schema.optional(Schema.Boolean)
  })),
  retention: Schema.optional(Schema.Struct({
    executions: Schema.optional(RetentionLimits),
    conversations: Schema.optional(RetentionLimits)
  })),
  agents: Schema.optional(Schema.Struct({
    providerOptionsAllow: Schema.optional(Schema.Array(ProviderOptionName)),
    approvalTtlSeconds: Schema.optional(Schema.Number.pipe(Schema.positive())),
    maxInputBytes: Schema.optional(Schema.Int.pipe(Schema.positive())),
    contextMaxBytes: Schema.optional(Schema.Int.pipe(Schema.positive()))
  })),
  http: Schema.optional(Schema.Struct({
    headersTimeoutSeconds: Schema.optional(Schema.Number.pipe(Schema.positive())),
    requestTimeoutSeconds: Schema.optional(Schema.Number.pipe(Schema.positive())),
    maxConnectionsPerClient: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
  })),
  publicUrl: Schema.optional(Schema.String.pipe(Schema.filter((url) => publicUrlProblem(url) ?? true))),
  schedules: Schema.optional(SchedulesConfigFile),
  webhooks: Schema.optional(WebhooksConfigFile),
  workflows: Schema.optional(Schema.Struct({
    leaseSeconds: Schema.optional(Schema.Number.pipe(Schema.positive())),
    pollMs: Schema.optional(Schema.Int.pipe(Schema.positive())),
    drainSeconds: Schema.optional(Schema.Number.pipe(Schema.nonNegative())),
    idempotencyKeyHours: Schema.optional(Schema.Number.pipe(Schema.positive())),
    maxQueuedPerKey: Schema.optional(Schema.Int.pipe(Schema.positive())),
    maxExecutionBytes: Schema.optional(Schema.Int.pipe(Schema.positive())),
    executeWaitSeconds: Schema.optional(Schema.Number.pipe(Schema.nonNegative())),
    recordReadsPerOwner: Schema.optional(Schema.Int.pipe(Schema.positive()))
  }))
})
export type ConfigFile = typeof ConfigFile.Type

/** Why `raw` cannot be the public URL (not an absolute http or https URL), or undefined. */
export const publicUrlProblem = (raw: string): string | undefined => {
  try {
    const url = new URL(raw)
    return url.protocol === "http:" || url.protocol === "https:"
      ? undefined
      : `must be an http or https URL, got ${url.protocol}`
  } catch {
    return "must be an absolute http or https URL"
  }
}
