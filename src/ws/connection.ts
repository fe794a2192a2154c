import { type HttpServerRequest, HttpServerResponse, Socket } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Queue, Scope } from "effect"
import { UpgradeRequired } from "../core/errors.js"

/** Bytes a socket may have waiting to be sent; a message that would pass this closes it with 1013 instead. */
export const MAX_BUFFERED = 4 * 1024 * 1024
/** Live feeds send more only once the client has read enough that at most this much waits to be sent. */
const RESUME_BELOW = 512 * 1024
export const TOO_SLOW = 1013

export interface Connection {
  /** Sends a JSON message (nothing once the socket is closing). */
  readonly send: (message: unknown) => Effect.Effect<void>
  /** Waits until the client has read what was sent (down to RESUME_BELOW bytes waiting). */
  readonly drained: Effect.Effect<void>
}

const decoder = new TextDecoder()

/**
 * The platform's socket writer is `ws.send`, which buffers without limit when the client stops reading.
 * What waits to be sent is the TCP socket's write buffer (the platform's WebSocket server does not
 * compress), so that is what bounds it.
 */
const boundedConnection = (
  request: HttpServerRequest.HttpServerRequest,
  write: (chunk: string | Socket.CloseEvent) => Effect.Effect<void, Socket.SocketError>
): Connection => {
  const tcp = NodeHttpServerRequest.toIncomingMessage(request).socket
  let closing = false
  const send = (message: unknown) =>
    Effect.suspend(() => {
      if (closing) return Effect.void
      const text = JSON.stringify(message)
      if (tcp.writableLength + Buffer.byteLength(text) > MAX_BUFFERED) {
        closing = true
        return Effect.ignore(write(new Socket.CloseEvent(TOO_SLOW, "Client too slow: messages are not being read")))
      }
      return Effect.ignore(write(text))
    })
  const drained = Effect.suspend(() =>
    tcp.writableLength <= RESUME_BELOW || !tcp.writableNeedDrain || tcp.destroyed
      ? Effect.void
      : Effect.async<void>((resume) => {
        const done = () => resume(Effect.void)
        tcp.once("drain", done)
        tcp.once("close", done)
        return Effect.sync(() => {
          tcp.off("drain", done)
          tcp.off("close", done)
        })
      })
  )
  return { send, drained }
}

/**
 * Upgrades (426 when the request is not a WebSocket handshake), then runs the connection: `onOpen` may
 * start feeds (scoped to the connection, so a client that leaves releases its subscriptions),
 * `onMessage` answers what the client sends.
 */
export const serve = (
  request: HttpServerRequest.HttpServerRequest,
  handlers: {
    readonly onOpen: (connection: Connection) => Effect.Effect<void, never, Scope.Scope>
    readonly onMessage?: (text: string, connection: Connection) => Effect.Effect<void>
  }
) =>
  Effect.gen(function*() {
    const socket = yield* request.upgrade.pipe(
      Effect.mapError(() => new UpgradeRequired({ message: "Upgrade required: this endpoint only accepts WebSocket connections" }))
    )
    yield* Effect.scoped(Effect.gen(function*() {
      const connection = boundedConnection(request, yield* socket.writer)
      const scope = yield* Effect.scope
      yield* socket.runRaw(
        (data) => handlers.onMessage?.(typeof data === "string" ? data : decoder.decode(data), connection) ?? Effect.void,
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
