import { Socket } from "@effect/platform"
import { Effect } from "effect"
import type { Socket as TcpSocket } from "node:net"

/**
 * The platform's socket writer is `ws.send`, which buffers without limit when the client stops reading.
 * What waits to be sent is the TCP socket's write buffer (our WebSocket servers do not compress), so that
 * is what bounds it: every WebSocket of the service (/ws, its console feeds, /rpc) writes through here.
 */

/** Bytes a socket may have waiting to be sent; a message that would pass this closes it with 1013 instead. */
export const MAX_BUFFERED = 4 * 1024 * 1024
/** Senders that wait do so until the client has read enough that at most this much waits to be sent. */
export const RESUME_BELOW = 512 * 1024
export const TOO_SLOW = 1013

type Write = (chunk: string | Uint8Array | Socket.CloseEvent) => Effect.Effect<void, Socket.SocketError>

const byteLength = (chunk: string | Uint8Array) =>
  typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.byteLength

export interface BoundedWrites {
  /** Sends now, or closes the socket with 1013 when that would leave more than MAX_BUFFERED waiting. */
  readonly send: (chunk: string | Uint8Array) => Effect.Effect<void>
  /** Waits until the client has read what was sent (down to RESUME_BELOW bytes waiting). */
  readonly drained: Effect.Effect<void>
  /** Waits for `drained`, then sends; what waits counts against MAX_BUFFERED too. */
  readonly sendWhenDrained: (chunk: string | Uint8Array) => Effect.Effect<void>
}

/** The write rules of one socket (`tcp` is the connection under it, `write` the platform's writer). */
export const boundedWrites = (tcp: TcpSocket, write: Write): BoundedWrites => {
  let closing = false
  // Bytes of sends waiting in `sendWhenDrained`: held by this process as surely as the TCP buffer.
  let waiting = 0
  const over = (size: number) => tcp.writableLength + waiting + size > MAX_BUFFERED
  const tooSlow = () => {
    closing = true
    return Effect.zipRight(
      Effect.logInfo(
        `Closed a WebSocket whose client does not read (${TOO_SLOW}): ${
          tcp.writableLength + waiting
        } bytes waited for it`
      ),
      Effect.ignore(write(new Socket.CloseEvent(TOO_SLOW, "Client too slow: messages are not being read")))
    )
  }
  const send = (chunk: string | Uint8Array) =>
    Effect.suspend(() => closing ? Effect.void : over(byteLength(chunk)) ? tooSlow() : Effect.ignore(write(chunk)))
  // Every sender that waits shares one pair of listeners (a client that does not read may have many).
  let released: Promise<void> | undefined
  const release = () =>
    released ??= new Promise<void>((resolve) => {
      const done = () => {
        tcp.off("drain", done)
        tcp.off("close", done)
        released = undefined
        resolve()
      }
      tcp.on("drain", done)
      tcp.on("close", done)
    })
  const drained: Effect.Effect<void> = Effect.suspend(() =>
    tcp.writableLength <= RESUME_BELOW || !tcp.writableNeedDrain || tcp.destroyed
      ? Effect.void
      : Effect.zipRight(Effect.promise(release), drained)
  )
  const sendWhenDrained = (chunk: string | Uint8Array) =>
    Effect.suspend(() => {
      if (closing) return Effect.void
      const size = byteLength(chunk)
      if (over(size)) return tooSlow()
      waiting += size
      return drained.pipe(Effect.ensuring(Effect.sync(() => (waiting -= size))), Effect.zipRight(send(chunk)))
    })
  return { send, drained, sendWhenDrained }
}
