import { HttpServerResponse } from "@effect/platform"
import { Cause, Deferred, Effect, Schedule, Stream } from "effect"
import { messageOf } from "../errors.js"
import { Shutdown } from "./Shutdown.js"

export interface SseFrame {
  readonly id?: number | string | undefined
  readonly event?: string | undefined
  readonly data: unknown
}

const encoder = new TextEncoder()
export const HEARTBEAT = encoder.encode(": ping\n\n")

export const encodeFrame = (frame: SseFrame): Uint8Array =>
  encoder.encode(
    (frame.id === undefined ? "" : `id: ${frame.id}\n`) +
      (frame.event === undefined ? "" : `event: ${frame.event}\n`) +
      `data: ${JSON.stringify(frame.data)}\n\n`
  )

/** Numbers the frames of a stream 0, 1, 2, ... */
export const numbered = <E, R>(events: Stream.Stream<unknown, E, R>): Stream.Stream<SseFrame, E, R> =>
  Stream.mapAccum(events, 0, (id, data) => [id + 1, { id, data }])

/** Bytes already in SSE form (a library's own encoding), sent as produced; ends on shutdown. */
export const sseBytesResponse = <E>(bytes: Stream.Stream<Uint8Array, E>, headers: Record<string, string> = {}) =>
  Effect.map(Shutdown, (shutdown) =>
    HttpServerResponse.stream(Stream.interruptWhen(bytes, Deferred.await(shutdown)), {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...headers }
    }))

/**
 * An SSE response written frame by frame as the stream produces them, with a `: ping` comment every
 * 15 s. A failure after the start becomes a final `{"type":"error","error"}` frame (logged), since
 * the status line is already sent; the stream also ends when the service shuts down.
 */
export const sseResponse = <E>(frames: Stream.Stream<SseFrame, E>) =>
  sseBytesResponse(frames.pipe(
    Stream.map(encodeFrame),
    Stream.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Stream.failCause(cause)
        : Stream.fromEffect(
          Effect.as(
            Effect.logWarning("Stream failed after it started", cause),
            encodeFrame({ data: { type: "error", error: messageOf(Cause.squash(cause)) } })
          )
        )
    ),
    Stream.merge(Stream.fromSchedule(Schedule.spaced("15 seconds")).pipe(Stream.as(HEARTBEAT)), {
      haltStrategy: "left"
    })
  ))
