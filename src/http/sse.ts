import * as Sse from "@effect/experimental/Sse"
import { HttpServerResponse } from "@effect/platform"
import { Cause, Chunk, Deferred, Effect, Exit, Fiber, Option, Runtime, Scope, Stream } from "effect"
import { Readable } from "node:stream"
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
 *
 * Written by a Node Readable that pulls the next chunk only when the socket has taken the previous
 * frames: an idle stream holds its pull and this object, no writer fiber and no merged heartbeat
 * stream (issue #42: those made an idle re-attach stream about 220 KB). One timer pings every open
 * stream, and one watcher per service ends them all on shutdown.
 */
export const sseFramesResponse = <E>(frames: Stream.Stream<Uint8Array, E>) =>
  Effect.gen(function*() {
    const shutdown = yield* Shutdown
    const ends = yield* endedOnShutdown(shutdown)
    const runtime = yield* Effect.runtime<never>()
    const scope = yield* Scope.make()
    const pull = yield* Scope.extend(Stream.toPull(frames), scope)
    let pulling: Fiber.RuntimeFiber<Chunk.Chunk<Uint8Array>, Option.Option<E>> | undefined
    let ended = false
    let released = false
    const push = (chunk: Uint8Array | null) => {
      if (ended) return
      if (chunk === null) ended = true
      readable.push(chunk)
    }
    const ping = () => push(HEARTBEAT)
    const end = () => push(null)
    const pulled = (exit: Exit.Exit<Chunk.Chunk<Uint8Array>, Option.Option<E>>) => {
      pulling = undefined
      if (Exit.isSuccess(exit)) {
        if (Chunk.isEmpty(exit.value)) return next()
        for (const frame of exit.value) push(frame)
        return
      }
      const failure = Cause.flipCauseOption(exit.cause)
      if (Option.isSome(failure) && !Cause.isInterruptedOnly(failure.value)) {
        // The status line is already sent: the failure becomes the last frame.
        Runtime.runFork(runtime)(Effect.logWarning("Stream failed after it started", failure.value))
        push(encodeEvent(jsonEvent({ type: "error", error: messageOf(Cause.squash(failure.value)) })))
      }
      end()
    }
    let started = false
    const next = () => {
      if (pulling !== undefined || ended) return
      if (!started) {
        // Only a response being written is pinged and ended on shutdown (one never sent holds nothing).
        started = true
        startPinging(ping)
        ends.add(end)
        if (Runtime.runSync(runtime)(Deferred.isDone(shutdown))) return end()
      }
      pulling = Runtime.runFork(runtime)(pull)
      pulling.addObserver(pulled)
    }
    const release = () => {
      if (released) return
      released = true
      ended = true
      stopPinging(ping)
      ends.delete(end)
      const fiber = pulling
      pulling = undefined
      // Closing the scope releases what the stream holds (a follower's subscription).
      Runtime.runFork(runtime)(
        Effect.andThen(fiber === undefined ? Effect.void : Fiber.interrupt(fiber), Scope.close(scope, Exit.void))
      )
    }
    // One frame at a time: the next pull waits until the socket has taken what was pushed.
    const readable: Readable = new Readable({
      highWaterMark: 1,
      read: next,
      destroy(error, callback) {
        release()
        callback(error)
      }
    })
    return HttpServerResponse.raw(readable, {
      // A raw body's content type is not written by the Node server: it goes in the headers.
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" }
    })
  })

const HEARTBEAT_MS = 15_000
const pinged = new Set<() => void>()
let heartbeat: ReturnType<typeof setInterval> | undefined

/** How many framed streams are open (for tests and diagnostics). */
export const openFramedStreams = () => pinged.size

/** Every open framed stream gets a `: ping` from one timer, which runs only while one is open. */
const startPinging = (ping: () => void) => {
  pinged.add(ping)
  if (heartbeat !== undefined) return
  heartbeat = setInterval(() => {
    for (const each of pinged) each()
  }, HEARTBEAT_MS)
  heartbeat.unref()
}

const stopPinging = (ping: () => void) => {
  pinged.delete(ping)
  if (pinged.size > 0 || heartbeat === undefined) return
  clearInterval(heartbeat)
  heartbeat = undefined
}

/** The ends of the open framed streams of a service, called when its shutdown begins (one fiber waits for it). */
const endsByShutdown = new WeakMap<Deferred.Deferred<void>, Set<() => void>>()

const endedOnShutdown = (shutdown: Deferred.Deferred<void>) =>
  Effect.suspend(() => {
    const known = endsByShutdown.get(shutdown)
    if (known !== undefined) return Effect.succeed(known)
    const ends = new Set<() => void>()
    endsByShutdown.set(shutdown, ends)
    return Effect.as(
      Effect.forkDaemon(Effect.andThen(Deferred.await(shutdown), () => {
        for (const end of ends) end()
      })),
      ends
    )
  })
