import { HttpApiBuilder, type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { RpcServer } from "@effect/rpc"
import { Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import { AuthPolicy, bearerToken } from "../auth/AuthPolicy.js"
import { consoleRefusal } from "../auth/ConsoleGuard.js"
import type { RouteEntry } from "../auth/RouteClass.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import { messageOf } from "../core/errors.js"
import { ANONYMOUS_MESSAGE_LIMIT, upgradeWithLimit } from "../http/WebSocketUpgrade.js"
import { CONSOLE_VERDICT_HEADER, RpcAuthenticationLive } from "./authentication.js"
import { BoundedJsonLive } from "./BoundedSerialization.js"
import { RpcHandlersLive } from "./handlers.js"
import { RPC_PATH, ServiceRpcs } from "./RpcContract.js"
import { MAX_CONNECTIONS_PER_CALLER, RpcStreamLimitLive } from "./RpcLimits.js"
import { boundedRpcSocket } from "./RpcSocket.js"

interface Handshake {
  /** The largest message the socket may send. */
  readonly limit: number
  /** Whose connection it is, for MAX_CONNECTIONS_PER_CALLER: the token's user, else the address. */
  readonly caller: string
}

const queryToken = (request: HttpServerRequest.HttpServerRequest) =>
  Option.fromNullable(new URL(request.url, "http://localhost").searchParams.get("token"))

/**
 * Who is connecting, decided on the handshake so the message limit is set before the first frame: a
 * token (`Authorization: Bearer`, or `?token=` where a browser cannot set headers) that verifies, or a
 * server that needs none, allows messages up to the body limit; a socket without a token under JWT gets
 * ANONYMOUS_MESSAGE_LIMIT. A token that does not verify refuses the handshake (as on /ws).
 */
const handshakeOf = (policy: AuthPolicy["Type"], bodyLimit: number, request: HttpServerRequest.HttpServerRequest) => {
  const address = `address:${Option.getOrElse(request.remoteAddress, () => "unknown")}`
  const token = Option.orElse(bearerToken(request.headers["authorization"]), () => queryToken(request))
  if (!policy.jwtEnabled) return Effect.succeed<Handshake>({ limit: bodyLimit, caller: address })
  if (Option.isNone(token)) return Effect.succeed<Handshake>({ limit: ANONYMOUS_MESSAGE_LIMIT, caller: address })
  return Effect.map(
    policy.authorizeCaller({
      routeClass: "execution",
      method: "GET",
      path: RPC_PATH,
      token,
      consoleKey: Option.none()
    }),
    (caller): Handshake => ({ limit: bodyLimit, caller: caller.userId === null ? address : `user:${caller.userId}` })
  )
}

const refusal = (status: number, error: string) => HttpServerResponse.unsafeJson({ success: false, error }, { status })

/** Open /rpc connections by caller (see Handshake). */
const connectionCounter = () => {
  const open = new Map<string, number>()
  return {
    enter: (caller: string) => {
      const count = open.get(caller) ?? 0
      if (count >= MAX_CONNECTIONS_PER_CALLER) return false
      open.set(caller, count + 1)
      return true
    },
    leave: (caller: string) => {
      const count = (open.get(caller) ?? 1) - 1
      if (count === 0) open.delete(caller)
      else open.set(caller, count)
    }
  }
}

/**
 * The console guard's verdict on the handshake, as a header only this process can write: the protocol
 * merges each message's headers over the handshake's, so a message could restate `Origin` and `Host`.
 * `nonce` when the handshake passes; `nonce:<why not>` when it does not.
 */
const consoleVerdict = (config: ServerConfigShape, nonce: string) => {
  const refusal = consoleRefusal({ host: config.host, production: config.production })
  return (request: HttpServerRequest.HttpServerRequest) => {
    const refused = refusal({ method: "GET", headers: request.headers })
    const { [CONSOLE_VERDICT_HEADER]: _, ...headers } = request.headers
    return { ...headers, [CONSOLE_VERDICT_HEADER]: refused === undefined ? nonce : `${nonce}:${refused.message}` }
  }
}

/**
 * The RPC server's app behind the handshake's checks (see Handshake; at most MAX_CONNECTIONS_PER_CALLER
 * connections each, else 429), its socket bounded (RpcSocket.ts) with the console guard's verdict among
 * its headers, and a 426 envelope for a request that is not a WebSocket handshake (the platform's app
 * would die on it). A `?token=` becomes the calls' `authorization` header when they carry none.
 */
const guardedApp = (
  app: HttpApp.Default<never, any>,
  options: {
    readonly policy: AuthPolicy["Type"]
    readonly bodyLimit: number
    readonly withVerdict: (request: HttpServerRequest.HttpServerRequest) => Record<string, string>
  }
): HttpApp.Default<never, any> => {
  const connections = connectionCounter()
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (request.headers["upgrade"]?.toLowerCase() !== "websocket") {
      return Effect.succeed(
        refusal(426, "Upgrade required: /rpc is an @effect/rpc WebSocket endpoint (JSON serialization)")
      )
    }
    return handshakeOf(options.policy, options.bodyLimit, request).pipe(
      Effect.flatMap(({ caller, limit }) => {
        if (!connections.enter(caller)) {
          return Effect.succeed(
            refusal(429, `Too many connections: at most ${MAX_CONNECTIONS_PER_CALLER} /rpc sockets per caller`)
          )
        }
        const headers = options.withVerdict(request)
        const token = queryToken(request)
        const tcp = NodeHttpServerRequest.toIncomingMessage(request).socket
        // The request as it is (its getters read the underlying Node request), but for these two.
        const guarded = Object.create(request, {
          headers: {
            value: headers["authorization"] === undefined && Option.isSome(token)
              ? { ...headers, authorization: `Bearer ${token.value}` }
              : headers
          },
          upgrade: {
            value: Effect.map(upgradeWithLimit(request, limit), (socket) => boundedRpcSocket(socket, tcp, limit))
          }
        }) as HttpServerRequest.HttpServerRequest
        return Effect.provideService(app, HttpServerRequest.HttpServerRequest, guarded).pipe(
          // The protocol dies on a message it cannot take (a request id that is not an integer): that
          // closes this client's connection, and is the client's fault, not an unhandled server failure.
          Effect.catchAllDefect((defect) =>
            Effect.as(Effect.logDebug(`RPC connection closed: ${messageOf(defect)}`), HttpServerResponse.empty())
          ),
          Effect.ensuring(Effect.sync(() => connections.leave(caller)))
        )
      }),
      Effect.catchTag("Unauthorized", (error) => Effect.succeed(refusal(401, error.message)))
    )
  })
}

/**
 * `ServiceRpcs` at `/rpc` on the API's router, so it shares the port and the HTTP middleware. Streams
 * use the protocol's acknowledgements: the server sends a stream's next chunk only once the client has
 * taken the previous one, so a slow reader holds back its own stream instead of growing a buffer.
 */
export const RpcRouteLive = (config: ServerConfigShape, routes: ReadonlyArray<RouteEntry>) => {
  const nonce = randomBytes(32).toString("hex")
  return HttpApiBuilder.Router.use((router) =>
    Effect.gen(function*() {
      const app = yield* RpcServer.toHttpAppWebsocket(ServiceRpcs, { spanPrefix: "Rpc" })
      const policy = yield* AuthPolicy
      yield* router.get(
        RPC_PATH,
        guardedApp(app, { policy, bodyLimit: config.bodyLimit, withVerdict: consoleVerdict(config, nonce) })
      )
    })
  ).pipe(
    Layer.provide([RpcHandlersLive, RpcAuthenticationLive(routes, nonce), RpcStreamLimitLive, BoundedJsonLive])
  )
}
