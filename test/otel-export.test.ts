import { expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { makeModel } from "../src/agents/models/providerModel.js"
import { defineApp } from "../src/App.js"
import { assistant } from "../src/examples/agents.js"
import { exampleApp } from "../src/examples/app.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive } from "./support/fakeProvider.js"
import { otlpReceiver } from "./support/otlpReceiver.js"
import { freePort, killed, spawnMain, waitForHttp } from "./support/process.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

/** What the local OTLP/HTTP receiver was sent, by signal. */
class Otlp extends Context.Tag("test/OtlpReceived")<Otlp, {
  readonly traces: Array<any>
  readonly metrics: Array<any>
  readonly logs: Array<any>
}>() {}

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly status?: { readonly code?: number }
  readonly attributes: Record<string, unknown>
}

const valueOf = (value: any): unknown =>
  value === undefined ?
    undefined
    : "stringValue" in value ?
    value.stringValue
    : "intValue" in value ?
    Number(value.intValue)
    : "doubleValue" in value ?
    value.doubleValue
    : "boolValue" in value ?
    value.boolValue
    : "arrayValue" in value ?
    (value.arrayValue.values ?? []).map(valueOf)
    : value

const attributesOf = (attributes: ReadonlyArray<any> | undefined): Record<string, unknown> =>
  Object.fromEntries((attributes ?? []).map((a: any) => [a.key, valueOf(a.value)]))

const spansOf = (bodies: ReadonlyArray<any>): Array<OtlpSpan> =>
  bodies.flatMap((body) =>
    (body.resourceSpans ?? []).flatMap((resource: any) =>
      (resource.scopeSpans ?? []).flatMap((scope: any) =>
        (scope.spans ?? []).map((span: any): OtlpSpan => ({
          ...span,
          attributes: attributesOf(span.attributes)
        }))
      )
    )
  )

/** The OTLP log records received, each with its resource's attributes. */
const logRecordsOf = (bodies: ReadonlyArray<any>): Array<any> =>
  bodies.flatMap((body) =>
    (body.resourceLogs ?? []).flatMap((resource: any) =>
      (resource.scopeLogs ?? []).flatMap((scope: any) =>
        (scope.logRecords ?? []).map((record: any) => ({
          ...record,
          body: valueOf(record.body),
          attributes: attributesOf(record.attributes),
          resource: attributesOf(resource.resource?.attributes)
        }))
      )
    )
  )

const metricNamesOf = (bodies: ReadonlyArray<any>): Set<string> =>
  new Set(
    bodies.flatMap((body) =>
      (body.resourceMetrics ?? []).flatMap((resource: any) =>
        (resource.scopeMetrics ?? []).flatMap((scope: any) => (scope.metrics ?? []).map((metric: any) => metric.name))
      )
    )
  )

const SPAN_KIND_CLIENT = 3
const STATUS_ERROR = 2

/** Polls `get` until `found` holds (exports are batched, stores are written a little later). */
const eventually = <A>(get: () => A | Promise<A>, found: (value: A) => boolean, what: string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 20_000
    for (;;) {
      const value = await get()
      if (found(value)) return value
      if (Date.now() > deadline) throw new Error(`${what}: not there within 20 s`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })

const Served = Layer.unwrapScoped(Effect.gen(function*() {
  const received = yield* otlpReceiver
  const fake = yield* FakeProvider
  // An agent whose provider answers 404 to every call.
  const broken = {
    ...assistant,
    id: "broken",
    model: yield* makeModel({ ...fakeModelSettings(fake), baseUrl: `${fake.url}/nope` })
  }
  return Layer.merge(
    TestServerLive({
      app: defineApp({ ...exampleApp, agents: [assistant, broken] }),
      config: { model: fakeModelSettings(fake), otlpEndpoint: received.url, metricExportIntervalMs: 300 }
    }),
    Layer.succeed(Otlp, received)
  )
})).pipe(Layer.provideMerge(FakeProviderLive))

const agentSpanOf = (spans: ReadonlyArray<OtlpSpan>, conversationId: string) =>
  spans.find((span) =>
    span.name.startsWith("AgentRegistry.") && span.attributes["gen_ai.conversation.id"] === conversationId
  )

layer(Served, { excludeTestServices: true })("what an OpenTelemetry backend receives", (it) => {
  it.effect("/text and /stream: GenAI model and tool spans under the agent span, memory writes inside the call, logs with its trace", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const otlp = yield* Otlp
      const text = yield* fetchJson(
        `${url}/agents/assistant/text`,
        json({
          input: "please add 2 and 3",
          options: { conversationId: "otel-text", temperature: 0.25, maxOutputTokens: 200 }
        })
      )
      expect(text.status).toBe(200)
      const streamed = yield* Effect.promise(() =>
        fetch(
          `${url}/agents/assistant/stream`,
          json({ input: "please add 2 and 3", options: { conversationId: "otel-stream" } })
        )
          .then((response) => response.text())
      )
      expect(streamed).toContain("\"finish\"")

      for (
        const [conversationId, route] of [["otel-text", "AgentRegistry.text"], [
          "otel-stream",
          "AgentRegistry.stream"
        ]] as const
      ) {
        // The call's trace as exported, once its memory write is in it.
        const spans = yield* eventually(() => spansOf(otlp.traces), (all) => {
          const agent = agentSpanOf(all, conversationId)
          return agent !== undefined &&
            all.some((span) => span.traceId === agent.traceId && span.name === "MemoryStore.saveCall")
        }, `${conversationId}'s trace`)
        const agent = agentSpanOf(spans, conversationId)!
        expect(agent).toMatchObject({
          name: route,
          attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "assistant" }
        })
        const trace = spans.filter((span) => span.traceId === agent.traceId)

        const models = trace.filter((span) => span.name === "chat fake-model")
        expect(models).toHaveLength(2)
        for (const model of models) {
          expect(model).toMatchObject({ kind: SPAN_KIND_CLIENT, parentSpanId: agent.spanId })
          expect(model.attributes).toMatchObject({
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai-compatible",
            "gen_ai.request.model": "fake-model",
            "gen_ai.response.model": "fake-model"
          })
          expect(model.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0)
          expect(model.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0)
        }
        expect(models.map((model) => model.attributes["gen_ai.response.finish_reasons"])).toEqual(
          expect.arrayContaining([["tool-calls"], ["stop"]])
        )
        if (conversationId === "otel-text") {
          expect(models[0]!.attributes).toMatchObject({
            "gen_ai.request.temperature": 0.25,
            "gen_ai.request.max_tokens": 200
          })
        }

        const tool = trace.find((span) => span.name === "execute_tool add")
        expect(tool).toMatchObject({
          parentSpanId: agent.spanId,
          attributes: {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "add",
            "gen_ai.tool.call.id": expect.stringMatching(/^call_/)
          }
        })
        const save = trace.find((span) => span.name === "MemoryStore.saveCall")
        expect(save).toMatchObject({ parentSpanId: agent.spanId })

        // The call's log line carries its trace and its span.
        const logs = yield* eventually(
          () =>
            fetch(`${url}/api/logs?conversationId=${conversationId}`).then((r) => r.json()).then((body: any) =>
              body.data as Array<any>
            ),
          (entries) => entries.length > 0,
          `${conversationId}'s log`
        )
        expect(logs[0]).toMatchObject({ message: "agent call completed", traceId: agent.traceId, spanId: agent.spanId })
      }

      // No memory write is a trace of its own.
      const roots = spansOf(otlp.traces).filter((span) => !span.parentSpanId)
      expect(roots.filter((span) => span.name.startsWith("MemoryStore."))).toEqual([])
      const agentTraces = new Set(
        spansOf(otlp.traces).filter((span) => span.name.startsWith("AgentRegistry.")).map((span) => span.traceId)
      )
      for (const span of spansOf(otlp.traces).filter((span) => span.name.startsWith("MemoryStore."))) {
        expect(agentTraces.has(span.traceId)).toBe(true)
      }
    }))

  it.effect("/chat and /stream-object: the call's span covers the model call, and its log line carries it", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const otlp = yield* Otlp
      yield* Effect.promise(() =>
        fetch(`${url}/agents/assistant/chat`, json({ input: "hi", options: { conversationId: "otel-chat" } })).then((
          r
        ) => r.text())
      )
      yield* Effect.promise(() =>
        fetch(
          `${url}/agents/assistant/stream-object`,
          json({
            input: "hi",
            schema: { type: "object", properties: { a: { type: "string" } } },
            options: { conversationId: "otel-object" }
          })
        ).then((r) => r.text())
      )
      for (const conversationId of ["otel-chat", "otel-object"]) {
        const spans = yield* eventually(
          () => spansOf(otlp.traces),
          (all) => agentSpanOf(all, conversationId) !== undefined,
          conversationId
        )
        const agent = agentSpanOf(spans, conversationId)!
        const model = spans.find((span) => span.traceId === agent.traceId && span.name === "chat fake-model")!
        expect(model.parentSpanId).toBe(agent.spanId)
        // The agent span ends after its model call (it lasts as long as the stream, not the handler).
        expect(BigInt((agent as any).endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt((model as any).endTimeUnixNano))
        const logs = yield* eventually(
          () =>
            fetch(`${url}/api/logs?conversationId=${conversationId}`).then((r) => r.json()).then((body: any) =>
              body.data as Array<any>
            ),
          (entries) => entries.length > 0,
          `${conversationId}'s log`
        )
        expect(logs[0]).toMatchObject({ traceId: agent.traceId, spanId: agent.spanId })
      }
    }))

  it.effect("a provider's failure is logged as a warning with its cause, in the call's trace; the spans are errors", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const otlp = yield* Otlp
      const body = yield* Effect.promise(() =>
        fetch(`${url}/agents/broken/stream`, json({ input: "hello", options: { conversationId: "otel-broken" } })).then(
          (r) => r.text()
        )
      )
      expect(body).toContain("\"error\"")
      const logs = yield* eventually(
        () =>
          fetch(`${url}/api/logs?conversationId=otel-broken`).then((r) => r.json()).then((body: any) =>
            body.data as Array<any>
          ),
        (entries) => entries.length > 0,
        "the failure's log"
      )
      expect(logs[0]).toMatchObject({ level: "warn", message: "agent call error", agentId: "broken" })
      expect(logs[0].attributes.cause).toContain("not found")
      const spans = yield* eventually(
        () => spansOf(otlp.traces),
        (all) => agentSpanOf(all, "otel-broken") !== undefined,
        "the failed call's span"
      )
      const agent = agentSpanOf(spans, "otel-broken")!
      expect(logs[0].traceId).toBe(agent.traceId)
      expect(agent.status?.code).toBe(STATUS_ERROR)
      // The same entry, as recorded, reaches the collector with its trace and span and the service's resource.
      const records = yield* eventually(
        () => logRecordsOf(otlp.logs),
        (all) => all.some((record) => record.attributes.conversationId === "otel-broken"),
        "the failure's OTLP log record"
      )
      const record = records.find((record) => record.attributes.conversationId === "otel-broken")
      expect(record).toMatchObject({
        severityNumber: 13,
        severityText: "WARN",
        body: "agent call error",
        traceId: agent.traceId,
        spanId: logs[0].spanId,
        attributes: { agentId: "broken", cause: logs[0].attributes.cause },
        resource: { "service.name": "agent-workflow-service", "service.instance.id": logs[0].instance }
      })
      const model = spans.find((span) => span.traceId === agent.traceId && span.name === "chat fake-model")!
      expect(model.status?.code).toBe(STATUS_ERROR)
      expect(model.attributes["error.type"]).toEqual(expect.any(String))
    }))

  it.effect("GET /metrics: Prometheus text with requests by route template and status, executions and tokens; OTLP gets them too", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const otlp = yield* Otlp
      expect((yield* fetchJson(`${url}/agents`)).status).toBe(200)
      expect((yield* fetchJson(`${url}/agents/nobody`)).status).toBe(404)
      expect((yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "hello" }))).status).toBe(200)
      const run = yield* fetchJson(`${url}/workflows/pipeline/execute`, json({ input: { text: "x", n: 1 } }))
      expect(run.body.data.status).toBe("completed")

      const response = yield* Effect.promise(() => fetch(`${url}/metrics`))
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toMatch(/^text\/plain/)
      const text = yield* Effect.promise(() => response.text())
      const line = (pattern: RegExp) => text.split("\n").find((l) => pattern.test(l))
      const sample = (pattern: RegExp) => Number(line(pattern)?.split(" ").at(-1))
      expect(sample(/^http_server_request_duration_count\{.*http_route="\/agents".*http_response_status_code="200"/))
        .toBeGreaterThanOrEqual(1)
      // The template, not the raw path: /agents/nobody is counted under /agents/:id.
      expect(
        sample(/^http_server_request_duration_count\{.*http_route="\/agents\/:id".*http_response_status_code="404"/)
      ).toBeGreaterThanOrEqual(1)
      expect(text).not.toContain("nobody")
      expect(sample(/^workflow_executions_total\{.*status="completed"/)).toBeGreaterThanOrEqual(1)
      expect(sample(/^gen_ai_client_token_usage_sum\{.*gen_ai_request_model="fake-model".*gen_ai_token_type="input"/))
        .toBeGreaterThan(0)
      expect(sample(/^gen_ai_client_token_usage_sum\{.*gen_ai_request_model="fake-model".*gen_ai_token_type="output"/))
        .toBeGreaterThan(0)
      expect(line(/^nodejs_eventloop_delay_p99/)).toBeDefined()

      const wanted = [
        "http.server.request.duration",
        "workflow.executions",
        "gen_ai.client.token.usage",
        "nodejs.eventloop.delay.p99"
      ]
      const names = yield* eventually(
        () => metricNamesOf(otlp.metrics),
        (found) => wanted.every((name) => found.has(name)),
        "OTLP metrics"
      )
      expect([...names]).toEqual(expect.arrayContaining(wanted))
    }))
})

it.scoped(
  "node dist/main.js: exports spans, metrics and logs over OTLP, and a streamed call's console lines carry its trace_id and span_id",
  () =>
    Effect.gen(function*() {
      const fake = yield* FakeProvider
      const dir = yield* tempDir
      const port = yield* Effect.promise(() => freePort())
      const received = yield* otlpReceiver
      const service = yield* Effect.acquireRelease(
        Effect.sync(() =>
          spawnMain(["--port", String(port)], {
            env: {
              DATABASE_URL: `file:${dir}/service.db`,
              AI_PROVIDER: "openai-compatible",
              AI_BASE_URL: `${fake.url}/v1`,
              AI_MODEL: "fake-model",
              AI_API_KEY: "test-key",
              OTEL_EXPORTER_OTLP_ENDPOINT: received.url,
              OTEL_METRIC_EXPORT_INTERVAL: "300"
            }
          })
        ),
        (spawned) => Effect.sync(() => killed(spawned))
      )
      yield* Effect.promise(() => waitForHttp(port))
      const url = `http://127.0.0.1:${port}`
      yield* Effect.promise(() =>
        fetch(`${url}/agents/assistant/stream`, json({ input: "hello", options: { conversationId: "console-ids" } }))
          .then((r) => r.text())
      )
      const stored = yield* eventually(
        () =>
          fetch(`${url}/api/logs?conversationId=console-ids`).then((r) => r.json()).then((body: any) =>
            body.data as Array<any>
          ),
        (entries) => entries.length > 0,
        "the stored line"
      )
      // Piped, the service logs logfmt: one line an entry, its annotations on it (the pretty logger's follow it).
      const printed = yield* eventually(
        () => service.stdout().split("agent call completed")[1]?.split("\n[")[0],
        (found) => found !== undefined && found.includes("span_id"),
        "the console line"
      )
      expect(printed).toMatch(new RegExp(`trace_id\\W+${stored[0].traceId}`))
      expect(printed).toMatch(new RegExp(`span_id\\W+${stored[0].spanId}`))

      // The built service (its exporters are bundled) sends the call's spans, its metrics and its log.
      yield* eventually(() => spansOf(received.traces), (spans) =>
        spans.some((span) => span.traceId === stored[0].traceId), "OTLP spans")
      yield* eventually(() =>
        metricNamesOf(received.metrics), (names) =>
        names.has("gen_ai.client.token.usage"), "OTLP metrics")
      yield* eventually(() =>
        logRecordsOf(received.logs), (records) =>
        records.some((record) =>
          record.traceId === stored[0].traceId
        ), "OTLP logs")
    }).pipe(Effect.provide(FakeProviderLive)),
  60_000
)
