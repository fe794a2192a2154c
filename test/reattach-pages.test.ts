import { describe, expect, layer, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

// A collection before each reading, so that memory measured is memory held, not garbage not yet collected.
setFlagsFromString("--expose-gc")
const collect: () => void = runInNewContext("gc")
/** What the process holds: its heap (events read, frames encoded) and its buffers (socket write queues). */
const held = () => {
  collect()
  const usage = process.memoryUsage()
  return usage.heapUsed + usage.arrayBuffers
}

const MB = 1024 * 1024
/** The review's input: accepted (under the 1 MiB cap), and its events make a history of about 29 MB. */
const INPUT = { text: `x${"a".repeat(1_048_000 - 1)}`, n: 21 }
const READERS = 10

interface Reader {
  /** Bytes this client read before its pause took hold (in this process, but not the server's). */
  readonly clientHeld: () => number
  readonly received: () => number
  readonly resume: () => Promise<string>
  readonly destroy: () => void
}

/** A GET whose client takes the status line and the first bytes, then stops reading (the TCP socket pauses). */
const slowReader = (port: string, path: string) =>
  new Promise<Reader>((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, path }, (response) => {
      response.pause()
      let received = 0
      const chunks: Array<Buffer> = []
      resolve({
        clientHeld: () => response.readableLength + (response.socket?.readableLength ?? 0),
        received: () => received + response.readableLength,
        resume: () =>
          new Promise((done) => {
            response.on("data", (chunk: Buffer) => {
              received += chunk.length
              chunks.push(chunk)
            })
            response.on("end", () => done(Buffer.concat(chunks).toString()))
            response.resume()
          }),
        destroy: () => request.destroy()
      })
    })
    request.on("error", reject)
    request.end()
  })

/**
 * Polls `measure` once every reader has received bytes, until two readings 300 ms apart differ by under
 * 2 MB (at most 30 s): what the readers settle at.
 */
const settled = (readers: ReadonlyArray<Reader>, measure: () => number) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 30_000
    let last = measure()
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 300))
      const now = measure()
      const ready = readers.every((reader) => reader.received() > 0)
      if ((ready && Math.abs(now - last) < 2 * MB) || Date.now() > deadline) return now
      last = now
    }
  })

const frames = (text: string) => text.split("\n").filter((line) => line.startsWith("data: ")).map((line) => JSON.parse(line.slice(6)))

const reattachTests = (it: Vitest.MethodsNonLive<TestServer, true>) => {
  it.effect("readers of a 1 MiB input's re-attach stream that stop reading hold about a page each, not the history", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const done = yield* fetchJson(`${url}/workflows/pipeline/execute`, json({ input: INPUT }))
      expect(done.status).toBe(200)
      const id: string = done.body.data.executionId
      const path = `/workflows/pipeline/executions/${id}/stream`
      const { port } = new URL(url)
      // Read once whole first, so that what is measured is the readers, not the first use of the code.
      const whole = yield* Effect.promise(async () => {
        const text = await (await fetch(`${url}${path}`)).text()
        return { bytes: Buffer.byteLength(text), frames: frames(text).length, largest: Math.max(...text.split("\n\n").map((frame) => frame.length)) }
      })
      console.log(`re-attach: ${whole.bytes} bytes in ${whole.frames} frames, the largest ${whole.largest}`)
      const before = held()
      const readers: Array<Reader> = yield* Effect.promise(() => Promise.all(Array.from({ length: READERS }, () => slowReader(port, path))))
      const after = yield* settled(readers, () => held() - readers.reduce((sum, reader) => sum + reader.clientHeld(), 0))
      const perReader = (after - before) / READERS
      console.log(`re-attach: ${READERS} paused readers hold ${(perReader / MB).toFixed(2)} MB each`)
      // Before: a page was 8 events with their values (1 to 2 MB each here), every frame of it encoded
      // at once: 25.2 MB per reader on SQLite, 24.9 on Postgres. Now a page is one event (each is over
      // 256 KiB) and the frame the socket is taking: 3.0 to 4.5 MB with a largest frame of 2.1 MB.
      expect(perReader).toBeLessThan(3 * whole.largest)
      // Readers that read again get the whole stream, values inline.
      const [first, ...rest] = readers
      for (const reader of rest) reader.destroy()
      const events = frames(yield* Effect.promise(() => first.resume()))
      expect(events[0].input.text.length).toBe(INPUT.text.length)
      expect(events.at(-1)).toMatchObject({ type: "workflow-result", status: "completed" })
      expect(events.length).toBe(whole.frames)
    }), { timeout: 120_000 })
}

layer(TestServerLive(), { excludeTestServices: true })("re-attach pages (SQLite)", reattachTests)

describe.skipIf(!postgresAvailable)("on Postgres", () => {
  layer(PostgresTestServerLive(), { excludeTestServices: true })("re-attach pages (Postgres)", reattachTests)
})
