import { Redacted, Schema } from "effect"
import { isIP } from "node:net"

/** The claim (or role) that makes a caller an administrator: `auth.admin` in the config file. */
export interface AdminRule {
  readonly claim: string
  readonly value: string
}

/** The `auth` section of the config file. */
export const AuthConfigFile = Schema.Struct({
  secret: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  publicKeyFile: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  defaultPrivate: Schema.optional(Schema.Boolean),
  publicRoutes: Schema.optional(Schema.Array(Schema.String.pipe(
    Schema.pattern(/^(\*|[A-Z]+) \/\S*$/, { message: () => "must look like \"METHOD /path\" (e.g. \"GET /agents/:id\")" })
  ))),
  admin: Schema.optional(Schema.Struct({
    claim: Schema.String.pipe(Schema.minLength(1)),
    value: Schema.String
  })),
  /** Accept tokens without `exp` (they never expire); off by default. JWT_ALLOW_NO_EXP=true also sets it. */
  allowNoExp: Schema.optional(Schema.Boolean),
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
