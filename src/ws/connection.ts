import type { Socket } from "@effect/platform"
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Queue, Scope } from "effect"
import { UpgradeRequired } from "../core/errors.js"
import { boundedWrites } from "../http/SocketWrites.js"
import { upgradeWithLimit } from "../http/WebSocketUpgrade.js"

export interface Connection {
  /** Sends a JSON message (nothing once the socket is closing; closes it with 1013 past MAX_BUFFERED). */
  readonly send: (message: unknown) => Effect.Effect<void>
  /** Waits until the client has read what was sent (down to RESUME_BELOW bytes waiting). */
  readonly drained: Effect.Effect<void>
}

const decoder = new TextDecoder()

const boundedConnection = (
  request: HttpServerRequest.HttpServerRequest,
  write: (chunk: string | Uint8Array | Socket.CloseEvent) => Effect.Effect<void, Socket.SocketError>
): Connection => {
  const writes = boundedWrites(NodeHttpServerRequest.toIncomingMessage(request).socket, write)
  return { send: (message) => Effect.suspend(() => writes.send(JSON.stringify(message))), drained: writes.drained }
}

/**
 * Upgrades with a message limit of `maxPayload` (426 when the request is not a WebSocket handshake), then
 * runs the connection: `onOpen` may start feeds (scoped to the connection, so a client that leaves releases
 * its subscriptions), `onMessage` answers what the client sends.
 */
export const serve = (
  request: HttpServerRequest.HttpServerRequest,
  handlers: {
    /** The largest message the client may send (the socket closes with 1009 past it). */
    readonly maxPayload: number
    readonly onOpen: (connection: Connection) => Effect.Effect<void, never, Scope.Scope>
    readonly onMessage?: (text: string, connection: Connection) => Effect.Effect<void>
  }
) =>
  Effect.gen(function*() {
    const socket = yield* upgradeWithLimit(request, handlers.maxPayload).pipe(
      Effect.mapError(() =>
        new UpgradeRequired({ message: "Upgrade required: this endpoint only accepts WebSocket connections" })
      )
    )
    yield* Effect.scoped(Effect.gen(function*() {
      const connection = boundedConnection(request, yield* socket.writer)
      const scope = yield* Effect.scope
      yield* socket.runRaw(
        (data) =>
          handlers.onMessage?.(typeof data === "string" ? data : decoder.decode(data), connection) ?? Effect.void,
        { onOpen: Scope.extend(handlers.onOpen(connection), scope) }
      ).pipe(Effect.catchAll(() => Effect.void))
    }))
    return HttpServerResponse.empty()
  })

/**
 * Forwards a live feed to the socket, keeping only what passes `keep`. It takes the next item only
 * once the socket has drained, so a slow client loses the feed's oldest items instead of buffering them.
 */
export const forward = <A>(
  subscription: Queue.Dequeue<A>,
  keep: (item: A) => boolean,
  toMessage: (item: A) => unknown,
  connection: Connection
) =>
  connection.drained.pipe(
    Effect.zipRight(Queue.take(subscription)),
    Effect.flatMap((item) => (keep(item) ? connection.send(toMessage(item)) : Effect.void)),
    Effect.forever,
    Effect.forkScoped
  )
