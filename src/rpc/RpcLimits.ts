import { Effect, Layer } from "effect"
import { TooManyRequests } from "../core/errors.js"
import { RpcStreamLimit } from "./RpcContract.js"

/** How many streams one /rpc connection may have open at once; another is refused with `TooManyRequests`. */
export const MAX_STREAMS_PER_CONNECTION = 64

/** How many /rpc connections one caller (a token's user, else an address) may hold; another handshake is a 429. */
export const MAX_CONNECTIONS_PER_CALLER = 16

/**
 * Counts each connection's open calls (every procedure is a stream): one over the bound fails with
 * `TooManyRequests` before its handler runs, and a call's slot is given back when it ends however it ends
 * (done, failed, interrupted by the client or by the connection closing).
 */
export const RpcStreamLimitLive = Layer.sync(RpcStreamLimit, () => {
  const open = new Map<number, number>()
  const release = (clientId: number) => {
    const count = (open.get(clientId) ?? 1) - 1
    if (count === 0) open.delete(clientId)
    else open.set(clientId, count)
  }
  return RpcStreamLimit.of(({ clientId, next }) =>
    Effect.suspend(() => {
      const count = open.get(clientId) ?? 0
      if (count >= MAX_STREAMS_PER_CONNECTION) {
        return Effect.fail(
          new TooManyRequests({
            message: `Too many streams: at most ${MAX_STREAMS_PER_CONNECTION} open calls per /rpc connection`
          })
        )
      }
      open.set(clientId, count + 1)
      return Effect.ensuring(next, Effect.sync(() => release(clientId)))
    })
  )
})
