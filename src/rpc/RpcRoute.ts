import { HttpApiBuilder, type HttpApp, HttpServerRequest, HttpServerResponse, Socket } from "@effect/platform"
import { RpcSerialization, RpcServer } from "@effect/rpc"
import { Effect, Layer } from "effect"
import type { RouteEntry } from "../auth/RouteClass.js"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import { messageOf } from "../errors.js"
import { RpcAuthenticationLive } from "./authentication.js"
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
 * The RPC server's app with the request's upgrade bounded (an RPC message is held to the body limit of
 * the HTTP routes), and a 426 envelope for a request that is not a WebSocket handshake (the platform's
 * app would die on it).
 */
const boundedApp = (app: HttpApp.Default<never, any>, limit: number): HttpApp.Default<never, any> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (request.headers["upgrade"]?.toLowerCase() !== "websocket") {
      return Effect.succeed(HttpServerResponse.unsafeJson(
        { success: false, error: "Upgrade required: /rpc is an @effect/rpc WebSocket endpoint (JSON serialization)" },
        { status: 426 }
      ))
    }
    // The request as it is, but for its upgrade (its getters read the underlying Node request).
    const bounded = Object.create(request, {
      upgrade: { value: Effect.map(request.upgrade, (socket) => boundedSocket(socket, limit)) }
    }) as HttpServerRequest.HttpServerRequest
    return Effect.provideService(app, HttpServerRequest.HttpServerRequest, bounded).pipe(
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
export const RpcRouteLive = (config: ServerConfigShape, routes: ReadonlyArray<RouteEntry>) =>
  HttpApiBuilder.Router.use((router) =>
    Effect.gen(function*() {
      const app = yield* RpcServer.toHttpAppWebsocket(ServiceRpcs, { spanPrefix: "Rpc" })
      yield* router.get(RPC_PATH, boundedApp(app, config.bodyLimit))
    })
  ).pipe(
    Layer.provide([RpcHandlersLive, RpcAuthenticationLive(config, routes), RpcSerialization.layerJson])
  )
