import { HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { createServer, type Server } from "node:http"
import type { Socket } from "node:net"
import { isLoopbackHost } from "../config/AuthSettings.js"
import type { HttpSettings } from "../config/ServerConfig.js"
import { StartupError } from "../config/StartupError.js"
import { messageOf } from "../core/errorMessages.js"
import { rememberUpgradeHead } from "../http/WebSocketUpgrade.js"

const SHUTDOWN_GRACE_MS = 3000

const describeListenError = (cause: unknown): string => {
  const code = (cause as { code?: string } | undefined)?.code
  if (code === "EADDRINUSE") return "address already in use"
  if (code === "EACCES") return "permission denied"
  if (code === "EADDRNOTAVAIL") return "address not available"
  return messageOf(cause)
}

const isLoopbackPeer = (address: string) => isLoopbackHost(address.replace(/^::ffff:/, ""))

/**
 * Counts the open connections of each remote address; one beyond `max` is marked refused (and closed
 * after the headers time-out if it sends nothing). Loopback peers are not counted.
 */
const capConnectionsPerClient = (server: Server, max: number, idleMs: number): WeakSet<Socket> => {
  const refused = new WeakSet<Socket>()
  if (max === 0) return refused
  const open = new Map<string, number>()
  server.prependListener("connection", (socket: Socket) => {
    const address = socket.remoteAddress
    if (address === undefined || isLoopbackPeer(address)) return
    const count = open.get(address) ?? 0
    if (count >= max) {
      refused.add(socket)
      socket.setTimeout(idleMs, () => socket.destroy())
      return
    }
    open.set(address, count + 1)
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1
      if (left === 0) open.delete(address)
      else open.set(address, left)
    })
  })
  return refused
}

/** The server's HttpServer, answering a request on a refused connection 503 (and closing it) before the app sees it. */
const refusingExcess =
  (refused: WeakSet<Socket>, max: number) => (server: HttpServer.HttpServer): HttpServer.HttpServer =>
    HttpServer.make({
      address: server.address,
      serve: (app, middleware) => {
        // Read straight from the fiber's context: this runs on every request.
        const guarded = Effect.withFiberRuntime<
          Effect.Effect.Success<typeof app>,
          Effect.Effect.Error<typeof app>,
          Effect.Effect.Context<typeof app>
        >((fiber) => {
          const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
          const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
          if (!refused.has(socket)) return app
          const error = `Too many connections from ${socket.remoteAddress} (at most ${max} at once)`
          return Effect.succeed(
            HttpServerResponse.unsafeJson({ success: false, error }, { status: 503, headers: { connection: "close" } })
          )
        })
        return middleware === undefined ? server.serve(guarded) : server.serve(guarded, middleware)
      }
    })

/**
 * A node:http server on host:port. A busy port is a StartupError (no fallback port). Headers must arrive
 * within `headersTimeoutMs` and the whole request within `requestTimeoutMs` (else 408 and the connection
 * closes), and one remote address holds at most `maxConnectionsPerClient` connections. On shutdown idle
 * keep-alive connections close at once and open streams get a short grace before they are cut, so
 * SIGTERM never waits on a client.
 */
export const NodeServerLive = (
  options: { readonly port: number; readonly host: string; readonly http: HttpSettings }
) => {
  const requestTimeout = options.http.requestTimeoutMs
  const headersTimeout = Math.min(options.http.headersTimeoutMs, requestTimeout)
  const server = createServer({
    headersTimeout,
    requestTimeout,
    // Node checks the time-outs this often (30 s by default, which would let a 10 s time-out run to 40 s).
    connectionsCheckingInterval: Math.max(50, Math.min(1000, headersTimeout / 4))
  })
  // A client reset during a WebSocket handshake must not crash the process. Registered before the
  // platform's handler, so the sockets' routes can complete the handshake with their own message limit.
  server.on("upgrade", (request, socket, head) => {
    socket.on("error", () => {})
    rememberUpgradeHead(request, head)
  })
  const refused = capConnectionsPerClient(server, options.http.maxConnectionsPerClient, headersTimeout)
  const listening = NodeHttpServer.layer(() => server, { port: options.port, host: options.host }).pipe(
    Layer.mapError((error) =>
      new StartupError({
        message: `Cannot listen on ${options.host}:${options.port}: ${describeListenError(error.cause)}`,
        exitCode: 1
      })
    ),
    // No cap (0): the server as it is, with no check on any request.
    Layer.map((context) => {
      if (options.http.maxConnectionsPerClient === 0) return context
      const refusing = refusingExcess(refused, options.http.maxConnectionsPerClient)
      return Context.add(context, HttpServer.HttpServer, refusing(Context.get(context, HttpServer.HttpServer)))
    })
  )
  const closeConnectionsOnShutdown = Layer.scopedDiscard(
    Effect.zipRight(
      HttpServer.HttpServer,
      Effect.addFinalizer(() =>
        Effect.sync(() => {
          server.closeIdleConnections()
          setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref()
        })
      )
    )
  )
  return Layer.provideMerge(closeConnectionsOnShutdown, listening)
}

/** What the HTTP app needs of Node besides a listening server (platform, file system, path, ETags). */
export const NodePlatformLive = NodeHttpServer.layerContext
