import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
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

/**
 * A node:http server on host:port. A busy port is a StartupError (no fallback port). On shutdown idle
 * keep-alive connections close at once and open streams get a short grace before they are cut, so
 * SIGTERM never waits on a client.
 */
export const NodeServerLive = (options: { readonly port: number; readonly host: string }) => {
  const server = createServer()
  // A client reset during a WebSocket handshake must not crash the process. Registered before the
  // platform's handler, so the sockets' routes can complete the handshake with their own message limit.
  server.on("upgrade", (request, socket, head) => {
    socket.on("error", () => {})
    rememberUpgradeHead(request, head)
  })
  const listening = NodeHttpServer.layer(() => server, { port: options.port, host: options.host }).pipe(
    Layer.mapError((error) =>
      new StartupError({
        message: `Cannot listen on ${options.host}:${options.port}: ${describeListenError(error.cause)}`,
        exitCode: 1
      })
    )
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
