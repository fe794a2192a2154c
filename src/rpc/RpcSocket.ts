import { Socket } from "@effect/platform"
import { Effect } from "effect"
import type { Socket as TcpSocket } from "node:net"
import { type BoundedWrites, boundedWrites } from "../http/SocketWrites.js"

/** WebSocket close code for a message larger than the service accepts (RFC 6455). */
const MESSAGE_TOO_BIG = 1009

const byteLength = (data: string | Uint8Array) => typeof data === "string" ? Buffer.byteLength(data) : data.byteLength

/**
 * The socket the RPC protocol gets: a message over `limit` bytes closes it with 1009 instead of being
 * decoded (the upgrade's `maxPayload` already refuses it at its header; this holds should the platform's
 * upgrade be used), and every write follows the sockets' rule (src/http/SocketWrites.ts): it waits while
 * more than 512 KiB wait to be sent, and a write that would leave more than 4 MiB waiting, counting those
 * that wait, closes the socket with 1013. The protocol writes each answer from its request's fiber, so a
 * client that sends and never reads holds back its own answers and then loses its connection.
 */
export const boundedRpcSocket = (socket: Socket.Socket, tcp: TcpSocket, limit: number): Socket.Socket => {
  // One budget per socket, however many times its writer is taken (the platform's writer is one function).
  let writes: BoundedWrites | undefined
  return {
    ...socket,
    writer: Effect.map(socket.writer, (write) => {
      const bounded = (writes ??= boundedWrites(tcp, write))
      return (chunk: string | Uint8Array | Socket.CloseEvent) =>
        Socket.isCloseEvent(chunk) ? Effect.ignore(write(chunk)) : bounded.sendWhenDrained(chunk)
    }),
    runRaw: (handler, options) =>
      Effect.scoped(Effect.flatMap(socket.writer, (write) =>
        socket.runRaw((data) =>
          byteLength(data) > limit
            ? Effect.ignore(
              write(new Socket.CloseEvent(MESSAGE_TOO_BIG, `Message exceeds ${limit} bytes`))
            ) as unknown as ReturnType<typeof handler>
            : handler(data), options)))
  }
}
