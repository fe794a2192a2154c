import { Context, Effect, Layer, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { type AuthSettings, consoleAccessOf } from "../config/AuthSettings.js"
import { ServerConfig } from "../config/ServerConfig.js"
import { messageOf, Unauthorized } from "../core/errors.js"
import { makeJwtVerifier } from "./Jwt.js"
import { anonymousCaller, authenticatedCaller, type Caller, DEFAULT_ADMIN_RULE, SHARED_CALLER } from "./Ownership.js"
import { compilePublicRoutes } from "./publicRoutes.js"
import type { RouteClass } from "./RouteClass.js"

export interface AuthRequest {
  readonly routeClass: RouteClass
  readonly method: string
  readonly path: string
  /** The bearer token, when the request carried one. */
  readonly token: Option.Option<string>
  /** The console access key, when the request carried one. */
  readonly consoleKey: Option.Option<string>
}

export class AuthPolicy extends Context.Tag("AuthPolicy")<AuthPolicy, {
  /** Whether a route of this class and path needs a token under the active configuration. */
  readonly requiresToken: (routeClass: RouteClass, method: string, path: string) => boolean
  /** The user of the request (null when anonymous), or why it may not proceed. */
  readonly authorize: (request: AuthRequest) => Effect.Effect<unknown, Unauthorized>
  /** As `authorize`, with whose records the caller may see and change. */
  readonly authorizeCaller: (request: AuthRequest) => Effect.Effect<Caller, Unauthorized>
  readonly jwtEnabled: boolean
  /** Whether console routes need the console key (production, or an address that is not loopback). */
  readonly consoleKeyRequired: boolean
}>() {}

const digest = (text: string) => createHash("sha256").update(text).digest()

/** Compares in constant time (over fixed-length digests, so the length does not leak either). */
const sameKey = (given: string, expected: Redacted.Redacted<string>) =>
  timingSafeEqual(digest(given), digest(Redacted.value(expected)))

export const bearerToken = (authorization: string | undefined): Option.Option<string> => {
  if (authorization === undefined) return Option.none()
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
  return match === null ? Option.none() : Option.some(match[1])
}

/**
 * The policy of `settings` for a service listening on `host` (console routes are open without a key
 * only outside production on loopback); fails when the JWT key cannot verify anything.
 */
export const makeAuthPolicy = Effect.fnUntraced(function*(settings: AuthSettings, host: string) {
  const jwt = settings.jwt
  const verifier = jwt === undefined ? undefined : yield* makeJwtVerifier(jwt)
  const isPublic = compilePublicRoutes(jwt?.publicRoutes ?? [])
  const mapUser = jwt?.mapUser ?? ((claims: Record<string, unknown>) => claims)
  const adminRule = jwt?.admin ?? DEFAULT_ADMIN_RULE

  const requiresToken = (routeClass: RouteClass, method: string, path: string) => {
    if (jwt === undefined || routeClass === "console" || routeClass === "probe" || isPublic(method, path)) return false
    return routeClass === "execution" || jwt.defaultPrivate
  }

  const consoleMode = consoleAccessOf(settings, host)
  const disabled = settings.production
    ? "Console access is disabled: SERVICE_CONSOLE_ACCESS_KEY is not set"
    : `Console access is disabled: the service listens on ${host}, not loopback, and SERVICE_CONSOLE_ACCESS_KEY is not set`
  const consoleAccess = (key: Option.Option<string>) => {
    if (consoleMode === "open") return Effect.succeed(null)
    if (settings.consoleKey === undefined) return Effect.fail(new Unauthorized({ message: disabled }))
    if (Option.isNone(key)) return Effect.fail(new Unauthorized({ message: "Console access key required" }))
    return sameKey(key.value, settings.consoleKey)
      ? Effect.succeed(null)
      : Effect.fail(new Unauthorized({ message: "Invalid console access key" }))
  }

  // A verified token names its owner (`sub`, or the id `mapUser` gives): one without is refused, never
  // taken as the anonymous owner whose records every other such token and no token at all would share.
  const callerOf = (token: string) =>
    Effect.flatMap(verifier!.verify(token), (claims) =>
      Effect.flatMap(
        Effect.tryPromise({
          try: () => Promise.resolve(mapUser(claims)).then((user) => authenticatedCaller(adminRule, claims, user)),
          catch: (error) => new Unauthorized({ message: `Invalid token: ${messageOf(error)}` })
        }),
        (caller) =>
          caller.userId === null
            ? Effect.fail(new Unauthorized({ message: "Invalid token: no subject" }))
            : Effect.succeed(caller)
      ))

  const authorize = (request: AuthRequest): Effect.Effect<Caller, Unauthorized> => {
    if (request.routeClass === "console") return Effect.as(consoleAccess(request.consoleKey), SHARED_CALLER)
    if (verifier === undefined) return Effect.succeed(SHARED_CALLER)
    if (requiresToken(request.routeClass, request.method, request.path)) {
      return Option.match(request.token, { onNone: () => Effect.fail(Unauthorized.required), onSome: callerOf })
    }
    // A public route still knows its caller when a valid token comes along.
    return Option.match(request.token, {
      onNone: () => Effect.succeed(anonymousCaller),
      onSome: (token) => Effect.orElseSucceed(callerOf(token), () => anonymousCaller)
    })
  }

  // Only a decision that checks something (a token, a console key) is a span of its own: an open route
  // under an open configuration is decided without work, and a span for it was half the spans of a GET.
  const checksSomething = (request: AuthRequest) =>
    request.routeClass === "console" ? consoleMode !== "open" : verifier !== undefined

  const checked = Effect.fn("AuthPolicy.authorize", { captureStackTrace: false })(function*(request: AuthRequest) {
    yield* Effect.annotateCurrentSpan("route.class", request.routeClass)
    return yield* authorize(request)
  })

  const authorizeCaller = (request: AuthRequest) => checksSomething(request) ? checked(request) : authorize(request)

  return AuthPolicy.of({
    requiresToken,
    authorize: (request) => Effect.map(authorizeCaller(request), (caller) => caller.user),
    authorizeCaller,
    jwtEnabled: verifier !== undefined,
    consoleKeyRequired: consoleMode !== "open"
  })
})

/** The policy of ServerConfig's `auth`; an unusable JWT key fails the layer with `InvalidJwtKey`. */
export const AuthPolicyLive = Layer.effect(
  AuthPolicy,
  Effect.flatMap(ServerConfig, (config) => makeAuthPolicy(config.auth, config.host))
)
