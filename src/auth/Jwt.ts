import { Data, Effect, Redacted } from "effect"
import { errors, type JWTHeaderParameters, type JWTPayload, jwtVerify } from "jose"
import { createPublicKey, type KeyObject } from "node:crypto"
import {
  DEFAULT_ALLOWED_TYPES,
  DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
  isPublicKey,
  type JwtSettings
} from "../config/AuthSettings.js"
import { messageOf, Unauthorized } from "../core/errors.js"

const HMAC = ["HS256", "HS384", "HS512"]
const RSA = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"]
const CURVES: Record<string, string> = { prime256v1: "ES256", secp384r1: "ES384", secp521r1: "ES512" }

/** The algorithms a public key can verify: its own family only. */
const familyOf = (key: KeyObject): ReadonlyArray<string> => {
  switch (key.asymmetricKeyType) {
    case "rsa":
      return RSA
    case "rsa-pss":
      return RSA.filter((alg) => alg.startsWith("PS"))
    case "ec":
      return [CURVES[key.asymmetricKeyDetails?.namedCurve ?? ""] ?? "ES256"]
    case "ed25519":
    case "ed448":
      return ["EdDSA"]
    default:
      return []
  }
}

export interface JwtVerifier {
  readonly verify: (token: string) => Effect.Effect<Record<string, unknown>, Unauthorized>
}

/** The configured JWT key cannot verify anything: the app cannot start (the command line exits 2). */
export class InvalidJwtKey extends Data.TaggedError("InvalidJwtKey")<{ readonly message: string }> {}

/** The key as jose takes it: a public key's KeyObject, or an HMAC secret's bytes. */
const keyOf = (settings: JwtSettings): Effect.Effect<KeyObject | Uint8Array, InvalidJwtKey> =>
  isPublicKey(settings.secret)
    ? Effect.try({
      try: () => createPublicKey(Redacted.value(settings.secret)),
      // Node's message names the PEM's fault, never its text.
      catch: (error) => new InvalidJwtKey({ message: `the public key cannot be read: ${messageOf(error)}` })
    })
    : Effect.succeed(new TextEncoder().encode(Redacted.value(settings.secret)))

/**
 * A verifier for the configured secret. A PEM public key is a key, never an HMAC secret, so a token
 * signed with HS256 using the public key's text is refused; `alg: none` is never accepted by jose.
 */
export const makeJwtVerifier = Effect.fnUntraced(function*(settings: JwtSettings) {
  const key = yield* keyOf(settings)
  const defaults = key instanceof Uint8Array ? ["HS256"] : familyOf(key)
  const algorithms = [...(settings.algorithms ?? defaults)].filter((alg) =>
    key instanceof Uint8Array ? HMAC.includes(alg) : familyOf(key).includes(alg)
  )
  if (algorithms.length === 0) {
    return yield* new InvalidJwtKey({
      message: `auth.verifyOptions.algorithms: none of ${settings.algorithms?.join(", ")} fits the configured key`
    })
  }
  const clockTolerance = settings.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS
  const maxLifetime = settings.maxTokenLifetimeSeconds ?? DEFAULT_MAX_TOKEN_LIFETIME_SECONDS
  const types = new Set((settings.allowedTypes ?? DEFAULT_ALLOWED_TYPES).map(normalType))
  const accepted = (header: JWTHeaderParameters) =>
    header.typ === undefined ? settings.requireType !== true : types.has(normalType(header.typ))
  const options = {
    algorithms,
    clockTolerance,
    // A token that never expires is still bounded: by its age.
    ...(settings.allowNoExp === true
      ? { requiredClaims: [], maxTokenAge: maxLifetime }
      : { requiredClaims: ["exp", "iat"] }),
    ...(settings.audience === undefined ? {} : { audience: settings.audience as string | Array<string> }),
    ...(settings.issuer === undefined ? {} : { issuer: settings.issuer as string | Array<string> })
  }
  return {
    verify: Effect.fn("Jwt.verify", { captureStackTrace: false })((token: string) =>
      Effect.tryPromise({
        try: () =>
          jwtVerify(token, key, options).then((result) => {
            if (!accepted(result.protectedHeader)) {
              // The header's value is not repeated: it is the caller's text.
              throw new errors.JOSEError("its type (typ) is not one auth.allowedTypes accepts")
            }
            return withinLifetime(issuedInThePast(result.payload, clockTolerance), maxLifetime)
          }),
        catch: (error) =>
          error instanceof errors.JWTExpired
            ? new Unauthorized({ message: "Token expired" })
            : new Unauthorized({ message: `Invalid token: ${messageOf(error)}` })
      })
    )
  } satisfies JwtVerifier
})

/** How far `iat` and `nbf` may be ahead of this clock, and `exp` behind it (`auth.verifyOptions.clockToleranceSeconds`). */
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 30

/** A `typ` as compared: `application/` is optional (RFC 7515 4.1.9) and media types are case-insensitive. */
const normalType = (typ: string): string => typ.toLowerCase().replace(/^application\//, "")

/**
 * A token whose `exp` lies more than `max` seconds after its `iat` is refused (a token for year 9999),
 * naming the setting. jose has checked that both are numbers, and required them unless allowNoExp.
 */
const withinLifetime = (payload: JWTPayload, max: number): JWTPayload => {
  if (payload.exp !== undefined && payload.iat !== undefined && payload.exp - payload.iat > max) {
    throw new errors.JWTClaimValidationFailed(
      `its lifetime (exp - iat) is over auth.maxTokenLifetimeSeconds (${max})`,
      payload,
      "exp",
      "check_failed"
    )
  }
  return payload
}

/**
 * jose checks a future `iat` only along with `maxTokenAge` (which would make `iat` required): a token
 * issued later than now plus the tolerance is refused here, with jose's wording.
 */
const issuedInThePast = (payload: JWTPayload, tolerance: number): JWTPayload => {
  // jose has already refused an `iat` that is not a number.
  if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + tolerance) {
    throw new errors.JWTClaimValidationFailed(
      "\"iat\" claim timestamp check failed (it should be in the past)",
      payload,
      "iat",
      "check_failed"
    )
  }
  return payload
}
