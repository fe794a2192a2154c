import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { randomBytes } from "node:crypto"
import WebSocket from "ws"
import { defineApp } from "../src/App.js"
import { exampleApp } from "../src/examples/app.js"
import { defineTool } from "../src/tools/Tool.js"
import { otlpReceiver } from "./support/otlpReceiver.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

const CONSOLE_KEY = "CONSOLE-KEY-SECRET-7f3a"
const HUGE = 5 * 1024 * 1024

/** A tool whose span carries huge attributes and that fails with a huge message. */
const bloat = defineTool({
  name: "bloat",
  description: "Records huge values on its span",
  parameters: Schema.Struct({}),
  execute: () =>
    Effect.gen(function*() {
      for (let i = 0; i < 20; i++) yield* Effect.annotateCurrentSpan(`big.${i}`, `${i}`.repeat(100_000))
      return yield* Effect.fail(new Error("y".repeat(HUGE)))
    }).pipe(Effect.withSpan("bloat", { attributes: { "entity.type": "agent", "entity.id": "bloat" } }))
})

/** Logs its text, also as an annotation. */
const note = defineTool({
  name: "note",
  description: "Logs a text",
  parameters: Schema.Struct({ text: Schema.String }),
  execute: ({ text }) => Effect.logInfo(text).pipe(Effect.annotateLogs({ link: text }), Effect.as({ noted: true }))
})

class Otlp extends Context.Tag("test/Otlp")<Otlp, { readonly bodies: Array<string> }>() {}

/** A local OTLP/HTTP receiver keeping every body, and the service exporting to it (production, console key). */
const Served = Layer.unwrapScoped(Effect.gen(function*() {
  const received = yield* otlpReceiver
  return Layer.merge(
    TestServerLive({
      app: defineApp({ ...exampleApp, tools: [...exampleApp.tools, bloat, note] }),
      // Console reads (/api/logs here) carry the secrets this checks; they are traced only with traceConsoleReads.
      config: {
        production: true,
        traceConsoleReads: true,
        otlpEndpoint: received.url,
        auth: { production: true, consoleKey: Redacted.make(CONSOLE_KEY) }
      }
    }),
    Layer.succeed(Otlp, { bodies: received.texts })
  )
}))

const newTraceparent = () => {
  const traceId = randomBytes(16).toString("hex")
  return { traceId, traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` }
}

const until = async (condition: () => boolean, ms: number) => {
  const deadline = Date.now() + ms
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  return condition()
}

const listen = (url: string) =>
  new Promise<{ socket: WebSocket; frames: Array<string> }>((resolve, reject) => {
    const socket = new WebSocket(url)
    const frames: Array<string> = []
    socket.on("message", (data) => frames.push(data.toString()))
    socket.on("error", reject)
    socket.on("open", () => resolve({ socket, frames }))
  })

const console = { "x-console-access-key": CONSOLE_KEY }
const storedTrace = (url: string, traceId: string) =>
  fetchJson(`${url}/observability/traces/${traceId}`, { headers: console }).pipe(
    Effect.map((r) => r.body.data.spans as Array<any>)
  )

/** The OTLP spans of one trace among everything received (OTLP/JSON carries ids as hex). */
const exportedSpans = (bodies: ReadonlyArray<string>, traceId: string): Array<any> =>
  bodies.flatMap((body) => {
    try {
      return (JSON.parse(body).resourceSpans ?? []).flatMap((resource: any) =>
        (resource.scopeSpans ?? []).flatMap((scope: any) =>
          (scope.spans ?? []).filter((span: any) => span.traceId === traceId)
        )
      )
    } catch {
      return []
    }
  })

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value))

layer(Served, { excludeTestServices: true })("what telemetry records", (it) => {
  it.effect(
    "headers and query values outside the allow-list are redacted in stored, pushed and exported spans and in logs",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const { bodies } = yield* Otlp
        const feed = yield* Effect.promise(() =>
          listen(`${url.replace(/^http/, "ws")}/ws/observability?key=${CONSOLE_KEY}`)
        )
        const guess = newTraceparent()
        const right = newTraceparent()
        const refused = yield* fetchJson(`${url}/api/logs?jwt=JWT-SECRET-VALUE&limit=5`, {
          headers: {
            "x-console-access-key": "GUESS-SECRET-VALUE",
            "x-custom": "CUSTOM-SECRET-VALUE",
            traceparent: guess.traceparent
          }
        })
        expect(refused.status).toBe(401)
        const allowed = yield* fetchJson(`${url}/api/logs?jwt=JWT-SECRET-VALUE&limit=5`, {
          headers: { ...console, traceparent: right.traceparent }
        })
        expect(allowed.status).toBe(200)
        yield* fetchJson(`${url}/agents/assistant/text?jwt=JWT-SECRET-VALUE`, {
          ...json({ input: "hello" }),
          headers: { "content-type": "application/json", ...console }
        })

        const [server] = (yield* storedTrace(url, guess.traceId)).filter((span) => span.kind === "server")
        expect(server.attributes).toMatchObject({
          "http.request.header.x-console-access-key": "[redacted]",
          "http.request.header.x-custom": "[redacted]",
          "http.request.header.user-agent": expect.any(String),
          "http.request.header.accept": "*/*",
          "url.query": "jwt=[redacted]&limit=5"
        })
        expect(server.attributes["url.full"]).toMatch(/\/api\/logs\?jwt=\[redacted\]&limit=5$/)
        const stored = JSON.stringify(yield* storedTrace(url, guess.traceId)) +
          JSON.stringify(yield* storedTrace(url, right.traceId))

        expect(yield* Effect.promise(() => until(() => exportedSpans(bodies, right.traceId).length > 0, 15_000))).toBe(
          true
        )
        const exported = bodies.join("\n")
        expect(exported).toContain("x-console-access-key")
        yield* fetchJson(
          `${url}/tools/note/execute`,
          json({ input: { text: "callback https://example.test/cb?jwt=JWT-SECRET-VALUE&limit=5" } })
        )
        const entries = (yield* fetchJson(`${url}/api/logs?limit=1000`, { headers: console })).body.data
        expect(entries.find((entry: any) => entry.message.startsWith("callback "))).toMatchObject({
          message: "callback https://example.test/cb?jwt=[redacted]&limit=5",
          attributes: { link: "callback https://example.test/cb?jwt=[redacted]&limit=5" }
        })
        const logs = JSON.stringify(entries)
        // The log record exported over OTLP is the recorded entry.
        const exportedLog = "callback https://example.test/cb?jwt=[redacted]&limit=5"
        const exportedAsLog = () =>
          bodies.some((body) => body.startsWith("{\"resourceLogs\"") && body.includes(exportedLog))
        expect(yield* Effect.promise(() => until(exportedAsLog, 15_000))).toBe(true)
        feed.socket.close()
        // The line is also an event of the tool's span (Effect's tracer): stored and exported redacted too.
        const callback = entries.find((entry: any) => entry.message.startsWith("callback "))
        const toolSpan = (yield* storedTrace(url, callback.traceId)).find((span) => span.name === "execute_tool note")
        expect(toolSpan.events.map((event: any) => event.name)).toContain(exportedLog)
        expect(yield* Effect.promise(() => until(() => exportedSpans(bodies, callback.traceId).length > 0, 15_000)))
          .toBe(true)
        for (const text of [stored, JSON.stringify(toolSpan), bodies.join("\n"), logs, feed.frames.join("\n")]) {
          for (const secret of [CONSOLE_KEY, "GUESS-SECRET-VALUE", "JWT-SECRET-VALUE", "CUSTOM-SECRET-VALUE"]) {
            expect(text).not.toContain(secret)
          }
        }
      }),
    { timeout: 60_000 }
  )

  it.effect(
    "huge values are capped: 8 KiB a value and 64 KiB a span, stored, pushed and exported",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const { bodies } = yield* Otlp
        const feed = yield* Effect.promise(() =>
          listen(`${url.replace(/^http/, "ws")}/ws/observability?entityType=agent&entityId=bloat&key=${CONSOLE_KEY}`)
        )
        const invalid = newTraceparent()
        const failing = newTraceparent()
        const rejected = yield* fetchJson(`${url}/tools/add/execute`, {
          ...json({ input: { a: "z".repeat(HUGE), b: 1 } }),
          headers: { "content-type": "application/json", traceparent: invalid.traceparent }
        })
        expect(rejected.status).toBe(400)
        const failed = yield* fetchJson(`${url}/tools/bloat/execute`, {
          ...json({ input: {} }),
          headers: { "content-type": "application/json", traceparent: failing.traceparent }
        })
        expect(failed.status).toBe(500)

        const spans = [...yield* storedTrace(url, invalid.traceId), ...yield* storedTrace(url, failing.traceId)]
        const bloated = spans.find((span) => span.name === "bloat")
        expect(bloated.attributes["big.0"]).toMatch(/^0+…\[truncated: 100000 characters in all\]$/)
        expect(bloated.status.message.length).toBeLessThan(8 * 1024)
        for (const span of spans) {
          const recorded = [
            ...Object.values(span.attributes),
            ...span.events.flatMap((event: any) => Object.values(event.attributes)),
            span.status.message ?? ""
          ]
          for (const value of recorded) expect(bytes(value)).toBeLessThanOrEqual(8 * 1024)
          expect(bytes({ attributes: span.attributes, events: span.events, message: span.status.message ?? "" }))
            .toBeLessThanOrEqual(64 * 1024 + 1024)
        }

        expect(
          yield* Effect.promise(() => until(() => feed.frames.some((frame) => frame.includes("span:end")), 15_000))
        ).toBe(true)
        for (const frame of feed.frames) expect(Buffer.byteLength(frame)).toBeLessThan(80 * 1024)
        feed.socket.close()

        const exported = () => [...exportedSpans(bodies, invalid.traceId), ...exportedSpans(bodies, failing.traceId)]
        expect(yield* Effect.promise(() => until(() => exported().some((span) => span.name === "bloat"), 15_000))).toBe(
          true
        )
        for (const span of exported()) expect(bytes(span)).toBeLessThan(96 * 1024)
      }),
    { timeout: 60_000 }
  )

  it.effect("a WebSocket route without a WebSocket handshake is 426 with the envelope", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      for (const path of ["/ws", `/ws/logs?key=${CONSOLE_KEY}`, `/ws/observability?key=${CONSOLE_KEY}`]) {
        const response = yield* fetchJson(`${url}${path}`)
        expect(response.status).toBe(426)
        expect(response.body).toEqual({ success: false, error: expect.stringContaining("WebSocket") })
      }
    }))
})
