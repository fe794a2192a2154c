import { type ConfigError, Either, Option, Redacted, Schema } from "effect"
import { readFileSync } from "node:fs"
import { isIP } from "node:net"
import { messageOf } from "../core/errorMessages.js"
import { invalid } from "./env.js"

/** The claim (or role) that makes a caller an administrator: `auth.admin` in the config file. */
export interface AdminRule {
  readonly claim: string
  readonly value: string
}

/** `auth.maxTokenLifetimeSeconds` by default: a day. */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 86_400
/** The greatest `auth.maxTokenLifetimeSeconds`: a year. */
const MAX_TOKEN_LIFETIME_BOUND = 31_536_000
/** `auth.allowedTypes` by default: plain JWTs and OAuth access tokens (RFC 9068); never refresh or ID-token types. */
export const DEFAULT_ALLOWED_TYPES: ReadonlyArray<string> = ["JWT", "at+jwt"]

/** The `auth` section of the config file. */
export const AuthConfigFile = Schema.Struct({
  secret: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  publicKeyFile: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  defaultPrivate: Schema.optional(Schema.Boolean),
  publicRoutes: Schema.optional(Schema.Array(Schema.String.pipe(
    Schema.pattern(/^(\*|[A-Z]+) \/\S*$/, {
      message: () => "must look like \"METHOD /path\" (e.g. \"GET /agents/:id\")"
    })
  ))),
  admin: Schema.optional(Schema.Struct({
    claim: Schema.String.pipe(Schema.minLength(1)),
    value: Schema.String
  })),
  /** Accept tokens without `exp` (they never expire); off by default. JWT_ALLOW_NO_EXP=true also sets it. */
  allowNoExp: Schema.optional(Schema.Boolean),
  /** The longest `exp - iat` a token may have (with allowNoExp, its greatest age); default 86,400 (a day). */
  maxTokenLifetimeSeconds: Schema.optional(Schema.Int.pipe(
    Schema.between(1, MAX_TOKEN_LIFETIME_BOUND, {
      message: () => `must be an integer from 1 to ${MAX_TOKEN_LIFETIME_BOUND}`
    })
  )),
  /** The header `typ` values accepted (case-insensitive, with or without `application/`); default JWT and at+jwt. */
  allowedTypes: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1)))),
  /** Refuse a token without `typ` (default false: accepted). */
  requireType: Schema.optional(Schema.Boolean),
  verifyOptions: Schema.optional(Schema.Struct({
    clockToleranceSeconds: Schema.optional(Schema.Int.pipe(
      Schema.between(0, 300, { message: () => "must be an integer from 0 to 300" })
    )),
    algorithms: Schema.optional(Schema.Array(Schema.String)),
    audience: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String))),
    issuer: Schema.optional(Schema.Union(Schema.String, Schema.Array(Schema.String)))
  }))
})
export type AuthConfigFile = typeof AuthConfigFile.Type

/** JWT authentication as configured; `secret` is a shared secret or a PEM public key. */
export interface JwtSettings {
  readonly secret: Redacted.Redacted<string>
  readonly defaultPrivate: boolean
  readonly publicRoutes: ReadonlyArray<string>
  readonly algorithms?: ReadonlyArray<string> | undefined
  readonly audience?: string | ReadonlyArray<string> | undefined
  readonly issuer?: string | ReadonlyArray<string> | undefined
  /** Accept tokens without `exp` (default: refused, `Invalid token: missing required "exp" claim`). */
  readonly allowNoExp?: boolean | undefined
  /** How far `iat`/`nbf` may be ahead of the clock and `exp` behind it (default 30 s). */
  readonly clockToleranceSeconds?: number | undefined
  /** The longest `exp - iat` accepted, `iat` then required (default a day); with allowNoExp, the greatest age. */
  readonly maxTokenLifetimeSeconds?: number | undefined
  /** The header `typ` values accepted (default `JWT`, `at+jwt`; case-insensitive, `application/` optional). */
  readonly allowedTypes?: ReadonlyArray<string> | undefined
  /** Refuse a token without `typ` (default: accepted). */
  readonly requireType?: boolean | undefined
  /** The claim (or role) whose holders see and manage every user's records (default `role: "admin"`). */
  readonly admin?: AdminRule | undefined
  /** Builds the user from the verified claims (default: the claims). Embedding programs set it in code. */
  readonly mapUser?: ((claims: Record<string, unknown>) => unknown) | undefined
}

/** Whether the configured secret is a PEM public key (asymmetric tokens) rather than a shared secret. */
export const isPublicKey = (secret: Redacted.Redacted<string>): boolean =>
  /-----BEGIN [A-Z ]*PUBLIC KEY-----/.test(Redacted.value(secret))

export interface AuthSettings {
  /** None: every route is public (except console routes in production). */
  readonly jwt?: JwtSettings | undefined
  readonly production: boolean
  readonly consoleKey?: Redacted.Redacted<string> | undefined
}

/** Whether `host` (an address to listen on) is a loopback address or name. */
export const isLoopbackHost = (host: string): boolean => {
  const address = host.replace(/^\[(.*)\]$/, "$1").toLowerCase()
  return address === "localhost" || address === "::1" || (isIP(address) === 4 && address.startsWith("127."))
}

/**
 * How console routes are reached: `open` outside production on a loopback address only; on any other
 * address, or in production, they need SERVICE_CONSOLE_ACCESS_KEY (`key`), and are `closed` without one.
 */
export type ConsoleAccess = "open" | "key" | "closed"

export const consoleAccessOf = (auth: AuthSettings, host: string): ConsoleAccess =>
  !auth.production && isLoopbackHost(host) ? "open" : auth.consoleKey === undefined ? "closed" : "key"

/** What resolveAuth reads from the environment. */
export interface AuthEnvironment {
  readonly jwtSecret: Option.Option<Redacted.Redacted<string>>
  readonly jwtAllowNoExp: Option.Option<boolean>
  readonly consoleKey: Option.Option<Redacted.Redacted<string>>
  readonly production: boolean
}

/**
 * JWT from the config file's `auth` (secret or publicKeyFile) or JWT_SECRET; the console key from
 * SERVICE_CONSOLE_ACCESS_KEY. Fails when `auth` names no key or the key file cannot be read.
 */
export const resolveAuth = (
  auth: AuthConfigFile | undefined,
  env: AuthEnvironment
): Either.Either<AuthSettings, ConfigError.ConfigError> => {
  const { consoleKey, jwtSecret: envSecret, production } = env
  let secret: Redacted.Redacted<string> | undefined
  if (auth?.publicKeyFile !== undefined) {
    const path = auth.publicKeyFile
    const read = Either.try(() => readFileSync(path, "utf8"))
    if (Either.isLeft(read)) return invalid("auth", messageOf(read.left))
    secret = Redacted.make(read.right)
  } else {
    secret = auth?.secret !== undefined ? Redacted.make(auth.secret) : Option.getOrUndefined(envSecret)
  }
  if (auth !== undefined && secret === undefined) {
    return invalid("auth", "auth: needs secret or publicKeyFile (or JWT_SECRET)")
  }
  if (secret !== undefined && Redacted.value(secret) === "") {
    return invalid("JWT_SECRET", "JWT_SECRET is empty: unset it to run without authentication, or give it a secret")
  }
  const key = Option.getOrUndefined(Option.filter(consoleKey, (key) => Redacted.value(key) !== ""))
  if (secret === undefined) return Either.right({ production, consoleKey: key })
  return Either.right({
    production,
    consoleKey: key,
    jwt: {
      secret,
      defaultPrivate: auth?.defaultPrivate ?? false,
      publicRoutes: auth?.publicRoutes ?? [],
      admin: auth?.admin,
      algorithms: auth?.verifyOptions?.algorithms,
      audience: auth?.verifyOptions?.audience,
      issuer: auth?.verifyOptions?.issuer,
      clockToleranceSeconds: auth?.verifyOptions?.clockToleranceSeconds,
      allowNoExp: Option.getOrElse(env.jwtAllowNoExp, () => auth?.allowNoExp ?? false),
      maxTokenLifetimeSeconds: auth?.maxTokenLifetimeSeconds,
      allowedTypes: auth?.allowedTypes,
      requireType: auth?.requireType
    }
  })
}
