import { HttpApiBuilder, type HttpApp, HttpServerRequest, HttpServerResponse, Socket } from "@effect/platform"
import { RpcSerialization, RpcServer } from "@effect/rpc"
import { Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { consoleRefusal } from "../auth/ConsoleGuard.js"
import type { RouteEntry } from "../auth/RouteClass.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import { messageOf } from "../core/errors.js"
import { CONSOLE_VERDICT_HEADER, RpcAuthenticationLive } from "./authentication.js"
import { RpcHandlersLive } from "./handlers.js"
import { RPC_PATH, ServiceRpcs } from "./RpcContract.js"

/** WebSocket close code for a message larger than the service accepts (RFC 6455). */
const MESSAGE_TOO_BIG = 1009

const byteLength = (data: string | Uint8Array) => typeof data === "string" ? Buffer.byteLength(data) : data.byteLength

/** The socket, closing with 1009 on a message over `limit` bytes instead of decoding it. */
const boundedSocket = (socket: Socket.Socket, limit: number): Socket.Socket => ({
  ...socket,
  runRaw: (handler, options) =>
    Effect.scoped(Effect.flatMap(socket.writer, (write) =>
      socket.runRaw((data) =>
        byteLength(data) > limit
          ? Effect.ignore(write(new Socket.CloseEvent(MESSAGE_TOO_BIG, `Message exceeds ${limit} bytes`))) as unknown as ReturnType<typeof handler>
          : handler(data), options)))
})

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
 * The RPC server's app with the request's upgrade bounded (an RPC message is held to the body limit of
 * the HTTP routes) and the console guard's verdict among its headers, and a 426 envelope for a request
 * that is not a WebSocket handshake (the platform's app would die on it).
 */
const guardedApp = (
  app: HttpApp.Default<never, any>,
  limit: number,
  withVerdict: (request: HttpServerRequest.HttpServerRequest) => Record<string, string>
): HttpApp.Default<never, any> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (request.headers["upgrade"]?.toLowerCase() !== "websocket") {
      return Effect.succeed(HttpServerResponse.unsafeJson(
        { success: false, error: "Upgrade required: /rpc is an @effect/rpc WebSocket endpoint (JSON serialization)" },
        { status: 426 }
      ))
    }
    // The request as it is (its getters read the underlying Node request), but for these two.
    const guarded = Object.create(request, {
      headers: { value: withVerdict(request) },
      upgrade: { value: Effect.map(request.upgrade, (socket) => boundedSocket(socket, limit)) }
    }) as HttpServerRequest.HttpServerRequest
    return Effect.provideService(app, HttpServerRequest.HttpServerRequest, guarded).pipe(
      // The protocol dies on a message it cannot take (a request id that is not an integer): that
      // closes this client's connection, and is the client's fault, not an unhandled server failure.
      Effect.catchAllDefect((defect) =>
        Effect.as(Effect.logDebug(`RPC connection closed: ${messageOf(defect)}`), HttpServerResponse.empty())
      )
    )
  })

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
      yield* router.get(RPC_PATH, guardedApp(app, config.bodyLimit, consoleVerdict(config, nonce)))
    })
  ).pipe(
    Layer.provide([RpcHandlersLive, RpcAuthenticationLive(routes, nonce), RpcSerialization.layerJson])
  )
}
