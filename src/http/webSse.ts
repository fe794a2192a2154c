import { HttpServerResponse } from "@effect/platform"
import { Deferred, Effect, FiberId } from "effect"
import { Readable } from "node:stream"
import { messageOf } from "../core/errors.js"
import { Shutdown } from "./Shutdown.js"
import { encodeEvent, HEARTBEAT, jsonEvent } from "./sse.js"

const HEARTBEAT_MS = 15_000
const frame = (id: number, data: unknown) => encodeEvent(jsonEvent(data, id))

/**
 * A web stream of events as an SSE response, numbered 0, 1, 2, ... and written as each event is
 * produced, by Node streams alone (no fiber work per frame), with a `: ping` comment every 15 s. When
 * the client goes away the web stream is cancelled; a stream that fails after the start ends with a
 * final `{"type":"error","error"}` frame, since the status line is already sent.
 */
export const webSseResponse = (events: ReadableStream<unknown>, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const shutdown = yield* Shutdown
    const reader = events.getReader()
    let id = 0
    let ended = false
    const push = (chunk: Uint8Array | null) => {
      if (ended) return
      if (chunk === null) ended = true
      readable.push(chunk)
    }
    const readable: Readable = new Readable({
      read() {
        reader.read().then(
          (next) => push(next.done ? null : frame(id++, next.value)),
          (error) => {
            push(frame(id++, { type: "error", error: messageOf(error) }))
            push(null)
          }
        )
      },
      destroy(error, callback) {
        ended = true
        stopWatching()
        reader.cancel(error ?? undefined).catch(() => undefined)
        callback(error)
      }
    })
    // Suspended until shutdown (no work per frame); ends the response so that shutdown never waits on it.
    const watcher = yield* Effect.forkDaemon(Effect.andThen(Deferred.await(shutdown), () => {
      push(null)
      reader.cancel().catch(() => undefined)
    }))
    const heartbeat = setInterval(() => push(HEARTBEAT), HEARTBEAT_MS)
    heartbeat.unref()
    const stopWatching = () => {
      clearInterval(heartbeat)
      watcher.unsafeInterruptAsFork(FiberId.none)
    }
    readable.once("end", stopWatching)
    return HttpServerResponse.raw(readable, {
      // A raw body's content type is not written by the Node server: it goes in the headers.
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
        ...headers
      }
    })
  })
