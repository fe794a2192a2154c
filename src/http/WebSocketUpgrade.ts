import { type HttpServerError, type HttpServerRequest, Socket } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect } from "effect"
import type { IncomingMessage } from "node:http"
import { type WebSocket, WebSocketServer } from "ws"

/**
 * WebSocket upgrades with a message limit of our choosing. The platform's upgrade (`request.upgrade`) uses
 * one `ws` server made without options, so every socket read frames of up to ws's default 100 MiB whole
 * before anything of ours could look at their size. Here the handshake is completed by a `ws` server made
 * with `maxPayload`: a frame that announces more is refused at its header (close 1009), before its bytes
 * are buffered. The route picks the limit once it knows who is connecting.
 */

/** The largest message a socket without a verified token may send (the socket closes with 1009 past it). */
export const ANONYMOUS_MESSAGE_LIMIT = 64 * 1024

// The bytes that came with the handshake (`head` of Node's 'upgrade' event), by request: the platform does
// not expose them, and a handshake completed without them would lose the start of a pipelined frame.
const heads = new WeakMap<IncomingMessage, Buffer>()

/** For the Node server's 'upgrade' event, registered before the platform's handler. */
export const rememberUpgradeHead = (request: IncomingMessage, head: Buffer): void => {
  heads.set(request, head)
}

const handshake = (incoming: IncomingMessage, head: Buffer, maxPayload: number) =>
  Effect.acquireRelease(
    Effect.async<WebSocket, Socket.SocketError>((resume) => {
      const socket = incoming.socket
      // A handshake ws refuses (a bad key or version) is answered 400 by ws and never calls back.
      const closed = () =>
        resume(Effect.fail(new Socket.SocketGenericError({ reason: "Open", cause: "closed during the handshake" })))
      socket.once("close", closed)
      // One small server per socket: its only state is its options (no client tracking, no listener).
      new WebSocketServer({ noServer: true, clientTracking: false, maxPayload }).handleUpgrade(
        incoming,
        socket,
        head,
        (ws) => {
          socket.off("close", closed)
          resume(Effect.succeed(ws))
        }
      )
      return Effect.sync(() => socket.off("close", closed))
    }),
    (ws) => Effect.sync(() => ws.close())
  )

/**
 * The request's WebSocket, whose messages may be at most `maxPayload` bytes. A request that did not come
 * through Node's 'upgrade' event (not a handshake, or a server without `rememberUpgradeHead`) gets the
 * platform's upgrade, which fails when it is not a handshake.
 */
export const upgradeWithLimit = (
  request: HttpServerRequest.HttpServerRequest,
  maxPayload: number
): Effect.Effect<Socket.Socket, HttpServerError.RequestError> => {
  const incoming = NodeHttpServerRequest.toIncomingMessage(request)
  const head = heads.get(incoming)
  if (head === undefined) return request.upgrade
  // `ws` implements the event-target half of the DOM WebSocket that `fromWebSocket` uses (the platform's
  // own Node upgrade passes it the same way).
  return Socket.fromWebSocket(
    handshake(incoming, head, maxPayload) as unknown as Effect.Effect<globalThis.WebSocket, Socket.SocketError>
  )
}
