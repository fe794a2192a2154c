import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

interface Summary {
  readonly traceId: string
  readonly name: string
}

interface StoredSpan {
  readonly name: string
  readonly kind: string
  readonly parentSpanId: string | null
  readonly attributes: Record<string, unknown>
}

/** Every stored trace with its spans, once a trace named `until` is among them (traces are written in the background). */
const tracesOnceThere = (url: string, until: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    for (;;) {
      const traces: Array<Summary> = (yield* fetchJson(`${url}/observability/traces?limit=500`)).body.data.traces
      if (traces.some((trace) => trace.name === until)) {
        const withSpans: Array<Summary & { spans: Array<StoredSpan> }> = []
        for (const trace of traces) {
          withSpans.push({
            ...trace,
            spans: (yield* fetchJson(`${url}/observability/traces/${trace.traceId}`)).body.data.spans
          })
        }
        return withSpans
      }
      if (Date.now() > deadline) {
        return yield* Effect.dieMessage(
          `no trace named ${until} within 20 s: ${traces.map((trace) => trace.name).join(", ")}`
        )
      }
      yield* Effect.sleep("50 millis")
    }
  })

/** The console's and the explorer's own reads (docs/decisions.md, "Issue #29: traces named by route"). */
const CONSOLE_READS = [
  "/observability/status",
  "/observability/traces?limit=5",
  "/observability/logs",
  "/api/logs?limit=5",
  "/metrics",
  "/doc",
  "/",
  "/console",
  "/console/assets/nothing.js",
  "/ui",
  "/favicon.ico"
]

const consoleReads = (url: string) =>
  Effect.forEach(
    CONSOLE_READS,
    (path) => Effect.map(fetchJson(`${url}${path}`), ({ status }) => expect(status, path).toBeLessThan(500)),
    { discard: true }
  )

describe("traces named by route", () => {
  it.scopedLive("a server span is named <METHOD> <route template>; an unmatched one by its method alone", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect((yield* fetchJson(`${url}/agents/assistant`)).status).toBe(200)
      expect((yield* fetchJson(`${url}/agents/nobody`)).status).toBe(404)
      expect((yield* fetchJson(`${url}/tools/add/execute`, json({ input: { a: 1, b: 2 } }))).status).toBe(200)
      expect((yield* fetchJson(`${url}/no/such/route`)).status).toBe(404)
      const traces = yield* tracesOnceThere(url, "POST /tools/:name/execute")
      const names = traces.map((trace) => trace.name)
      expect(names.filter((name) => name === "GET /agents/:id")).toHaveLength(2)
      expect(names).toContain("GET")
      expect(names.some((name) => name.startsWith("http.server"))).toBe(false)
      const unmatched = traces.find((trace) => trace.name === "GET")!.spans.find((span) => span.kind === "server")!
      expect(unmatched.attributes).toMatchObject({ "url.path": "/no/such/route" })
      expect(unmatched.attributes).not.toHaveProperty("http.route")

      // The metrics still label requests by route (they are read off the same spans).
      const metrics: string = (yield* fetchJson(`${url}/metrics`)).body
      expect(metrics).toMatch(
        /http_server_request_duration_count\{[^}]*http_route="\/agents\/:id"[^}]*http_response_status_code="404"/
      )
      expect(metrics).toMatch(/http_server_request_duration_count\{[^}]*http_route="\/tools\/:name\/execute"/)
    }).pipe(Effect.provide(TestServerLive())))

  it.scopedLive("the console's and explorer's own reads are not traced, nor are the spans their handlers make", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* consoleReads(url)
      expect((yield* fetchJson(`${url}/agents`)).status).toBe(200)
      const traces = yield* tracesOnceThere(url, "GET /agents")
      const spans = traces.flatMap((trace) => trace.spans)
      expect(traces.map((trace) => trace.name)).toEqual(["GET /agents"])
      expect(spans.filter((span) => /^(TraceStore|LogStore|Updates)\./.test(span.name))).toEqual([])
      // Filtering by entity still works: a workflow's traces, and only them.
      expect((yield* fetchJson(`${url}/workflows/pipeline/execute`, json({ input: { text: "x", n: 1 } }))).status).toBe(
        200
      )
      const executed = yield* tracesOnceThere(url, "POST /workflows/:id/execute")
      // The stores' commits run in the writer's own untraced fiber (src/storage/batching.ts): no SQL span.
      const workflowSpans = executed.find((trace) => trace.name === "POST /workflows/:id/execute")!.spans
      expect(workflowSpans.map((span) => span.name)).toContain("WorkflowEngine.execute")
      const everySpan = executed.flatMap((trace) => trace.spans.map((span) => span.name))
      expect(everySpan.filter((name) => name === "sql.execute")).toEqual([])
      const filtered: Array<Summary> =
        (yield* fetchJson(`${url}/observability/traces?entityType=workflow&entityId=pipeline`)).body.data.traces
      expect(filtered.map((trace) => trace.name)).toEqual(["POST /workflows/:id/execute"])
    }).pipe(Effect.provide(TestServerLive())))

  it.scopedLive("with traceConsoleReads (TRACE_CONSOLE_READS=true) they are, named by route", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* consoleReads(url)
      expect((yield* fetchJson(`${url}/agents`)).status).toBe(200)
      const names = (yield* tracesOnceThere(url, "GET /agents")).map((trace) => trace.name)
      expect(names).toEqual(expect.arrayContaining([
        "GET /observability/status",
        "GET /observability/traces",
        "GET /api/logs",
        "GET /metrics",
        "GET /doc",
        "GET /console",
        "GET /console/assets/:name",
        "GET /favicon.ico"
      ]))
    }).pipe(Effect.provide(TestServerLive({ config: { traceConsoleReads: true } }))))
})
