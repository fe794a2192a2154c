import { Data, Effect, Redacted } from "effect"
import { errors, type JWTPayload, jwtVerify } from "jose"
import { createPublicKey, type KeyObject } from "node:crypto"
import { messageOf, Unauthorized } from "../core/errors.js"
import { isPublicKey, type JwtSettings } from "../config/AuthSettings.js"

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
  const options = {
    algorithms,
    clockTolerance,
    requiredClaims: settings.allowNoExp === true ? [] : ["exp"],
    ...(settings.audience === undefined ? {} : { audience: settings.audience as string | Array<string> }),
    ...(settings.issuer === undefined ? {} : { issuer: settings.issuer as string | Array<string> })
  }
  return {
    verify: Effect.fn("Jwt.verify", { captureStackTrace: false })((token: string) =>
      Effect.tryPromise({
        try: () => jwtVerify(token, key, options).then((result) => issuedInThePast(result.payload, clockTolerance)),
        catch: (error) =>
          error instanceof errors.JWTExpired
            ? new Unauthorized({ message: "Token expired" })
            : new Unauthorized({ message: `Invalid token: ${messageOf(error)}` })
      }))
  } satisfies JwtVerifier
})

/** How far `iat` and `nbf` may be ahead of this clock, and `exp` behind it (`auth.verifyOptions.clockToleranceSeconds`). */
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 30

/**
 * jose checks a future `iat` only along with `maxTokenAge` (which would make `iat` required): a token
 * issued later than now plus the tolerance is refused here, with jose's wording.
 */
const issuedInThePast = (payload: JWTPayload, tolerance: number): Record<string, unknown> => {
  // jose has already refused an `iat` that is not a number.
  if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + tolerance) {
    throw new errors.JWTClaimValidationFailed("\"iat\" claim timestamp check failed (it should be in the past)", payload, "iat", "check_failed")
  }
  return payload as Record<string, unknown>
}
