import * as Sse from "@effect/experimental/Sse"
import { HttpServerResponse } from "@effect/platform"
import { Cause, Deferred, Effect, Schedule, Stream } from "effect"
import { messageOf } from "../core/errors.js"
import { Shutdown } from "./Shutdown.js"

const textEncoder = new TextEncoder()
// Hand-written: a comment line, which the library's encoder (events and `retry:` only) cannot write.
export const HEARTBEAT = textEncoder.encode(": ping\n\n")

/**
 * An SSE event: the shape of @effect/experimental's `Sse.Event`, which encodes it, declared here so the
 * package's types do not reach into a dependency embedders do not share.
 */
export interface SseEvent {
  readonly _tag: "Event"
  readonly event: string
  readonly id: string | undefined
  readonly data: string
}

/** An event whose data is `data` as JSON (one line), numbered `id` when given. */
export const jsonEvent = (data: unknown, id?: number): SseEvent => ({
  _tag: "Event",
  event: "message",
  id: id === undefined ? undefined : String(id),
  data: JSON.stringify(data)
})

export const encodeEvent = (event: SseEvent): Uint8Array => textEncoder.encode(Sse.encoder.write(event))

/** Numbers the frames of a stream 0, 1, 2, ... */
export const numbered = <E, R>(events: Stream.Stream<unknown, E, R>): Stream.Stream<SseEvent, E, R> =>
  Stream.mapAccum(events, 0, (id, data) => [id + 1, jsonEvent(data, id)])

/**
 * Bytes already in SSE form (a library's own encoding), sent as produced, each chunk once the socket
 * has taken the previous ones; ends on shutdown.
 */
export const sseBytesResponse = <E>(bytes: Stream.Stream<Uint8Array, E>, headers: Record<string, string> = {}) =>
  Effect.map(Shutdown, (shutdown) =>
    // One frame per chunk: the server writes a whole chunk before it waits for the socket to drain.
    HttpServerResponse.stream(Stream.interruptWhen(Stream.rechunk(bytes, 1), Deferred.await(shutdown)), {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-cache", "x-accel-buffering": "no", ...headers }
    }))

/**
 * An SSE response written frame by frame as the stream produces them, each once the socket has taken
 * the previous ones (the client's pace bounds what waits in memory), with a `: ping` comment every 15 s. A failure after the start becomes a final `{"type":"error","error"}` frame (logged), since
 * the status line is already sent; the stream also ends when the service shuts down.
 */
export const sseResponse = <E>(events: Stream.Stream<SseEvent, E>) => sseFramesResponse(Stream.map(events, encodeEvent))

/**
 * sseResponse of frames already encoded (encodeEvent): a producer that encodes each value where it
 * makes it holds one form of it, not the value, its JSON and its bytes at once.
 */
export const sseFramesResponse = <E>(frames: Stream.Stream<Uint8Array, E>) =>
  sseBytesResponse(frames.pipe(
    Stream.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Stream.failCause(cause)
        : Stream.fromEffect(
          Effect.as(
            Effect.logWarning("Stream failed after it started", cause),
            encodeEvent(jsonEvent({ type: "error", error: messageOf(Cause.squash(cause)) }))
          )
        )
    ),
    Stream.merge(Stream.fromSchedule(Schedule.spaced("15 seconds")).pipe(Stream.as(HEARTBEAT)), {
      haltStrategy: "left"
    })
  ))
