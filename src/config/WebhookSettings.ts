import { Config, Either, Option, Redacted, Schema } from "effect"
import { readFileSync } from "node:fs"
import { messageOf } from "../core/errorMessages.js"
import { invalid, parsed, secret } from "./env.js"

/** The `webhooks` section of the config file (issue #33, completion callbacks). */
export const WebhooksConfigFile = Schema.Struct({
  /**
   * Hosts (names or literal addresses) callbacks may go to, as `host` (port 443) or `host:port`; none
   * by default: no callbacks at all.
   */
  allowedHosts: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(253)))),
  retryWindowHours: Schema.optional(Schema.Number.pipe(Schema.positive())),
  backoffSeconds: Schema.optional(Schema.Number.pipe(Schema.positive())),
  maxBackoffSeconds: Schema.optional(Schema.Number.pipe(Schema.positive())),
  payloadMaxBytes: Schema.optional(Schema.Int.pipe(Schema.between(1024, 16 * 1024 * 1024))),
  maxPendingPerOwner: Schema.optional(Schema.Int.pipe(Schema.positive())),
  maxInFlightPerOwner: Schema.optional(Schema.Int.pipe(Schema.between(1, 64))),
  secretGraceHours: Schema.optional(Schema.Number.pipe(Schema.nonNegative())),
  /** A PEM file of CA certificates trusted for https callbacks besides Node's own. */
  caFile: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  /**
   * Signs the callbacks of code-schedule executions (owned by `system:schedule/<id>`). Its length is
   * checked where it is resolved: a schema's message would print the value.
   */
  systemSecret: Schema.optional(Schema.String)
})
export type WebhooksConfigFile = typeof WebhooksConfigFile.Type

export interface WebhookSettings {
  /** `host` (port 443) or `host:port`, as a URL's `host` writes them (lower case, IPv6 in brackets, no `:443`). */
  readonly allowedHosts: ReadonlyArray<string>
  /** A delivery is retried until this long after it was made (24 h). */
  readonly retryWindowMs: number
  /** The first retry's wait (1 s), doubling up to `maxBackoffMs` (1 h). */
  readonly backoffMs: number
  readonly maxBackoffMs: number
  /** A body's size at most (256 KiB); a bigger result is sent cut and flagged `truncated`. */
  readonly payloadMaxBytes: number
  /** Pending deliveries per owner at most (10,000); one more is recorded failed. */
  readonly maxPendingPerOwner: number
  /** Attempts of one owner in flight per instance at most (8 of the instance's 64): one receiver cannot hold them all. */
  readonly maxInFlightPerOwner: number
  /** How long a rotated secret still signs (24 h). */
  readonly secretGraceMs: number
  /** The extra CA certificates' PEM text (`caFile`, WEBHOOK_CA_FILE). */
  readonly ca?: string | undefined
  readonly systemSecret?: Redacted.Redacted<string> | undefined
}

const HOUR_MS = 3600 * 1000
/** The shortest system secret taken (from the file or WEBHOOK_SYSTEM_SECRET). */
const SYSTEM_SECRET_MIN = 16

export const defaultWebhookSettings: WebhookSettings = {
  allowedHosts: [],
  retryWindowMs: 24 * HOUR_MS,
  backoffMs: 1000,
  maxBackoffMs: HOUR_MS,
  payloadMaxBytes: 256 * 1024,
  maxPendingPerOwner: 10_000,
  maxInFlightPerOwner: 8,
  secretGraceMs: 24 * HOUR_MS
}

/**
 * An allowed-host entry as a URL's `host` writes it (so that it compares with one): lower case, IPv4
 * spellings made dotted, IPv6 in brackets, the default port dropped; none when it is not `host[:port]`.
 */
const normaliseHost = (entry: string): string | undefined => {
  const text = entry.trim()
  if (text === "" || /[\s/?#@\\]/.test(text)) return undefined
  const bareIpv6 = !text.startsWith("[") && text.indexOf(":") !== text.lastIndexOf(":")
  try {
    return new URL(`https://${bareIpv6 ? `[${text}]` : text}`).host
  } catch {
    return undefined
  }
}

const normaliseHosts = (name: string, entries: ReadonlyArray<string>): Either.Either<ReadonlyArray<string>, string> => {
  const hosts: Array<string> = []
  for (const entry of entries) {
    const host = normaliseHost(entry)
    if (host === undefined) return Either.left(`${name}: "${entry}" is not host or host:port`)
    hosts.push(host)
  }
  return Either.right(hosts)
}

/** WEBHOOK_ALLOWED_HOSTS (comma-separated), WEBHOOK_CA_FILE and WEBHOOK_SYSTEM_SECRET. */
export const webhookEnvironment = Config.all({
  allowedHosts: parsed(
    "WEBHOOK_ALLOWED_HOSTS",
    (raw) => normaliseHosts("WEBHOOK_ALLOWED_HOSTS", raw.split(",").filter((host) => host.trim() !== ""))
  ),
  caFile: parsed("WEBHOOK_CA_FILE", Either.right),
  systemSecret: secret("WEBHOOK_SYSTEM_SECRET")
})
type WebhookEnvironment = Config.Config.Success<typeof webhookEnvironment>

/** The settings from the config file's `webhooks` and the environment (which wins); fails when the CA file cannot be read. */
export const resolveWebhookSettings = (file: WebhooksConfigFile | undefined, env: WebhookEnvironment) => {
  const caFile = Option.getOrUndefined(env.caFile) ?? file?.caFile
  let ca: string | undefined
  if (caFile !== undefined) {
    const read = Either.try(() => readFileSync(caFile, "utf8"))
    if (Either.isLeft(read)) return invalid("WEBHOOK_CA_FILE", `webhooks.caFile: ${messageOf(read.left)}`)
    ca = read.right
  }
  const systemSecret = Option.getOrUndefined(env.systemSecret) ??
    (file?.systemSecret === undefined ? undefined : Redacted.make(file.systemSecret))
  if (systemSecret !== undefined && Redacted.value(systemSecret).length < SYSTEM_SECRET_MIN) {
    return invalid(
      "WEBHOOK_SYSTEM_SECRET",
      `webhooks.systemSecret must be at least ${SYSTEM_SECRET_MIN} characters (its value is not shown)`
    )
  }
  const allowedHosts = Option.isSome(env.allowedHosts)
    ? Either.right(env.allowedHosts.value)
    : normaliseHosts("webhooks.allowedHosts", file?.allowedHosts ?? [])
  if (Either.isLeft(allowedHosts)) return invalid("WEBHOOK_ALLOWED_HOSTS", allowedHosts.left)
  const d = defaultWebhookSettings
  return Either.right<WebhookSettings>({
    allowedHosts: allowedHosts.right,
    retryWindowMs: file?.retryWindowHours === undefined ? d.retryWindowMs : file.retryWindowHours * HOUR_MS,
    backoffMs: file?.backoffSeconds === undefined ? d.backoffMs : file.backoffSeconds * 1000,
    maxBackoffMs: file?.maxBackoffSeconds === undefined ? d.maxBackoffMs : file.maxBackoffSeconds * 1000,
    payloadMaxBytes: file?.payloadMaxBytes ?? d.payloadMaxBytes,
    maxPendingPerOwner: file?.maxPendingPerOwner ?? d.maxPendingPerOwner,
    maxInFlightPerOwner: file?.maxInFlightPerOwner ?? d.maxInFlightPerOwner,
    secretGraceMs: file?.secretGraceHours === undefined ? d.secretGraceMs : file.secretGraceHours * HOUR_MS,
    ca,
    systemSecret
  })
}
