import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import WebSocket from "ws"
import { defineApp } from "../src/App.js"
import { exampleApp } from "../src/examples/app.js"
import { defineTool } from "../src/tools/Tool.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/** Logs `count` lines `<tag>:<i>:xxx...` of about `size` characters, as agent "chatter" (so /ws/observability sees them). */
const chatter = defineTool({
  name: "chatter",
  description: "Logs many lines",
  parameters: Schema.Struct({ tag: Schema.String, count: Schema.Number, size: Schema.Number }),
  execute: ({ count, size, tag }) =>
    Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => Effect.logInfo(`${tag}:${i}:${"x".repeat(size)}`),
      { discard: true }
    ).pipe(
      Effect.annotateLogs({ agentId: "chatter" }),
      Effect.as({ logged: count })
    )
})

const app = defineApp({ ...exampleApp, tools: [...exampleApp.tools, chatter] })

interface Client {
  readonly socket: WebSocket
  /** Log messages received (from `update` or OBSERVABILITY_LOG frames). */
  readonly lines: Array<string>
  bytes: number
  closeCode: number | undefined
}

const connect = (url: string, options: { readonly paused: boolean }) =>
  new Promise<Client>((resolve, reject) => {
    const socket = new WebSocket(url)
    const client: Client = { socket, lines: [], bytes: 0, closeCode: undefined }
    socket.on("message", (data) => {
      const text = data.toString()
      client.bytes += text.length
      const message = JSON.parse(text)
      if (message.type === "update") client.lines.push(...message.logs.map((entry: any) => entry.message))
      if (message.type === "OBSERVABILITY_LOG") client.lines.push(message.data.message)
    })
    socket.on("close", (code) => (client.closeCode = code))
    socket.on("error", () => {})
    socket.on("unexpected-response", (_request, response) => reject(new Error(`refused: ${response.statusCode}`)))
    socket.on("open", () => {
      // Stop reading from the TCP socket: the server's writes pile up on its side.
      if (options.paused) (socket as any)._socket.pause()
      resolve(client)
    })
  })

const until = async (condition: () => boolean, ms: number) => {
  const deadline = Date.now() + ms
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  return condition()
}

const BATCHES = 40
const PER_BATCH = 100
const SIZE = 6_000

layer(TestServerLive({ app }), { excludeTestServices: true })("live feeds and slow WebSocket clients", (it) => {
  it.effect(
    "a client that stops reading loses messages (bounded on the server) and does not stall the feed for others",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const ws = url.replace(/^http/, "ws")
        const feeds = [`${ws}/ws/logs`, `${ws}/ws/observability?entityType=agent&entityId=chatter`]
        const stalled = yield* Effect.promise(() => Promise.all(feeds.map((feed) => connect(feed, { paused: true }))))
        const readers = yield* Effect.promise(() => Promise.all(feeds.map((feed) => connect(feed, { paused: false }))))

        // About 24 MB of log lines per socket, in batches small enough for a reading client to keep up.
        for (let batch = 0; batch < BATCHES; batch++) {
          const response = yield* fetchJson(
            `${url}/tools/chatter/execute`,
            json({ input: { tag: `burst${batch}`, count: PER_BATCH, size: SIZE } })
          )
          expect(response.status).toBe(200)
        }
        yield* fetchJson(`${url}/tools/chatter/execute`, json({ input: { tag: "after", count: 1, size: 1 } }))

        // Readers keep receiving new entries although the stalled subscribers are far behind.
        const seen = (client: Client) => () => client.lines.some((line) => line.startsWith("after:"))
        for (const reader of readers) expect(yield* Effect.promise(() => until(seen(reader), 30_000))).toBe(true)

        // The stalled clients now read what the server kept for them: not everything was buffered.
        for (const client of stalled) (client.socket as any)._socket.resume()
        for (const client of stalled) {
          yield* Effect.promise(() => until(() => seen(client)() || client.closeCode !== undefined, 30_000))
          const bursts = client.lines.filter((line) => line.startsWith("burst")).length
          const closedAsTooSlow = client.closeCode === 1013 || client.closeCode === 1008
          expect(closedAsTooSlow || bursts < BATCHES * PER_BATCH).toBe(true)
          // What it got is what the server had buffered (at most ~4 MB, plus the kernel's buffers) and the
          // feed's window of the newest 1,024 entries: far less than the ~24 MB produced.
          expect(client.bytes).toBeLessThan(BATCHES * PER_BATCH * SIZE * 0.7)
        }
        for (const client of [...stalled, ...readers]) client.socket.close()
      }),
    { timeout: 90_000 }
  )

  it.effect(
    "an /ws client that sends but never reads is closed with 1013 once 4 MB wait for it",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const client = yield* Effect.promise(() => connect(`${url.replace(/^http/, "ws")}/ws`, { paused: true }))
        let echoes = 0
        client.socket.on("message", (data) => {
          if (data.toString().startsWith(`{"type":"ECHO"`)) echoes++
        })
        const payload = JSON.stringify({ pad: "p".repeat(100_000) })
        for (let i = 0; i < 400; i++) client.socket.send(payload)
        // Once the client has sent all 40 MB the server has read most of it (TCP flow control), so its
        // answers exceed the bound before the client reads anything.
        yield* Effect.promise(() => until(() => client.socket.bufferedAmount === 0, 60_000))
        ;(client.socket as any)._socket.resume()
        expect(yield* Effect.promise(() => until(() => client.closeCode !== undefined, 30_000))).toBe(true)
        expect(client.closeCode).toBe(1013)
        expect(echoes).toBeLessThan(400)
      }),
    { timeout: 90_000 }
  )
})
