import { expect, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { exportSPKI, generateKeyPair, SignJWT } from "jose"
import type { IncomingMessage } from "node:http"
import WebSocket from "ws"
import { otlpReceiver } from "./support/otlpReceiver.js"
import { type CollectedMessages, collectMessages } from "./support/sockets.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/** Opens a WebSocket and collects its messages; resolves the HTTP status when the handshake is refused. */
const openSocket = (url: string) =>
  new Promise<(CollectedMessages & { socket: WebSocket }) | { refused: number }>((resolve) => {
    const socket = new WebSocket(url)
    const collected = collectMessages(socket, 5000)
    socket.on(
      "unexpected-response",
      (_request, response: IncomingMessage) => resolve({ refused: response.statusCode ?? 0 })
    )
    socket.on("error", () => {})
    socket.on("open", () => resolve({ socket, ...collected }))
  })

const opened = async (url: string) => {
  const result = await openSocket(url)
  if ("refused" in result) throw new Error(`handshake refused with ${result.refused}`)
  return result
}

const wsUrl = (url: string) => url.replace(/^http/, "ws")

layer(TestServerLive(), { excludeTestServices: true })("observability", (it) => {
  it.effect("agent and workflow calls become traces with entity spans, model and tool spans; status counts them", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "please add 2 and 3" }))
      yield* fetchJson(`${url}/workflows/pipeline/execute`, json({ input: { text: "x", n: 1 } }))

      const status = (yield* fetchJson(`${url}/observability/status`)).body.data
      expect(status).toMatchObject({ enabled: true, storage: "sqlite" })
      expect(status.traceCount).toBeGreaterThan(0)
      expect(status.spanCount).toBeGreaterThan(status.traceCount)
      expect(status.logCount).toBeGreaterThan(0)

      const agentTraces =
        (yield* fetchJson(`${url}/observability/traces?entityType=agent&entityId=assistant`)).body.data
      expect(agentTraces.total).toBeGreaterThan(0)
      const summary = agentTraces.traces[0]
      expect(summary).toMatchObject({
        entityType: "agent",
        entityId: "assistant",
        status: "ok",
        traceId: expect.any(String)
      })
      expect(summary.spanCount).toBeGreaterThan(2)

      const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
      const names = trace.spans.map((span: any) => span.name)
      expect(names).toEqual(expect.arrayContaining(["AgentRegistry.text", "chat echo", "execute_tool add"]))
      const agentSpan = trace.spans.find((span: any) => span.name === "AgentRegistry.text")
      expect(agentSpan.attributes).toMatchObject({ "entity.type": "agent", "entity.id": "assistant" })
      const modelSpan = trace.spans.find((span: any) => span.name === "chat echo")
      expect(modelSpan).toMatchObject({
        kind: "client",
        attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": "echo" }
      })
      expect(modelSpan.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0)
      expect(modelSpan.parentSpanId).toBe(agentSpan.spanId)
      expect(trace.spans.some((span: any) => span.kind === "server")).toBe(true)

      const one = (yield* fetchJson(`${url}/observability/spans/${agentSpan.spanId}`)).body.data
      expect(one).toMatchObject({
        spanId: agentSpan.spanId,
        traceId: summary.traceId,
        status: { code: expect.any(String) }
      })
      expect(one.durationMs).toBeGreaterThanOrEqual(0)

      const workflowTraces =
        (yield* fetchJson(`${url}/observability/traces?entityType=workflow&entityId=pipeline`)).body.data
      const workflowTrace =
        (yield* fetchJson(`${url}/observability/traces/${workflowTraces.traces[0].traceId}`)).body.data
      const steps = workflowTrace.spans.filter((span: any) => span.name === "workflow.step")
      expect(steps.map((span: any) => span.attributes["step.id"])).toEqual(
        expect.arrayContaining(["normalize", "measure", "merge", "double-if-large", "audit", "finishers", "finish"])
      )
      expect(workflowTrace.spans.some((span: any) => span.name === "WorkflowEngine.drive")).toBe(true)

      expect(yield* fetchJson(`${url}/observability/traces/nope`)).toMatchObject({
        status: 404,
        body: { error: "Trace nope not found" }
      })
      expect(yield* fetchJson(`${url}/observability/spans/nope`)).toMatchObject({
        status: 404,
        body: { error: "Span nope not found" }
      })
      expect((yield* fetchJson(`${url}/observability/traces?entityType=robot`)).status).toBe(400)
    }))

  it.effect("a read through the API is a span of its service: GET /agents/:id is AgentRegistry.details, under the request", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect((yield* fetchJson(`${url}/agents/assistant`)).status).toBe(200)
      expect((yield* fetchJson(`${url}/agents/nobody`)).status).toBe(404)
      const detailsOf = (agentId: string) =>
        Effect.gen(function*() {
          const deadline = Date.now() + 20_000
          for (;;) {
            const { traces } = (yield* fetchJson(`${url}/observability/traces?limit=50`)).body.data
            for (const { traceId } of traces) {
              const spans: Array<any> = (yield* fetchJson(`${url}/observability/traces/${traceId}`)).body.data.spans
              const details = spans.find((span) =>
                span.name === "AgentRegistry.details" && span.attributes["agent.id"] === agentId
              )
              if (details !== undefined) return { details, request: spans.find((span) => span.kind === "server") }
            }
            if (Date.now() > deadline) {
              return yield* Effect.dieMessage(`no AgentRegistry.details span for ${agentId} within 20 s`)
            }
            yield* Effect.sleep("50 millis")
          }
        })
      const found = yield* detailsOf("assistant")
      expect(found.details).toMatchObject({ parentSpanId: found.request.spanId, status: { code: "ok" } })
      // A read is not an agent call: its trace is not filed under the agent.
      expect(found.details.attributes).not.toHaveProperty("entity.id")
      const missing = yield* detailsOf("nobody")
      expect(missing.details.status.code).toBe("error")
    }))

  it.effect("logs: filters by agent, workflow, execution, level, trace and span; newest last; bounded limit", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* fetchJson(
        `${url}/agents/assistant/text`,
        json({ input: "hello", options: { conversationId: "log-conv" } })
      )
      const run = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 5 } }))
      const executionId = run.body.data.executionId

      const byAgent = (yield* fetchJson(`${url}/api/logs?agentId=assistant`)).body.data
      expect(byAgent.length).toBeGreaterThan(0)
      expect(byAgent.every((entry: any) => entry.agentId === "assistant")).toBe(true)
      const byConversation = (yield* fetchJson(`${url}/api/logs?conversationId=log-conv`)).body.data
      expect(byConversation[0]).toMatchObject({ agentId: "assistant", conversationId: "log-conv", level: "info" })
      const byExecution = (yield* fetchJson(`${url}/api/logs?workflowId=approval&executionId=${executionId}`)).body.data
      expect(byExecution.map((entry: any) => entry.message)).toEqual(["workflow started", "workflow completed"])
      expect(byExecution[0].timestamp <= byExecution[1].timestamp).toBe(true)
      expect(byExecution[0].traceId).toMatch(/^[0-9a-f]{32}$/)

      const errorsOnly = (yield* fetchJson(`${url}/api/logs?level=error`)).body.data
      expect(errorsOnly.every((entry: any) => entry.level === "error" || entry.level === "fatal")).toBe(true)
      expect((yield* fetchJson(`${url}/api/logs?limit=1`)).body.data).toHaveLength(1)
      expect((yield* fetchJson(`${url}/api/logs?level=loud`)).status).toBe(400)
      expect((yield* fetchJson(`${url}/api/logs?since=soon`)).status).toBe(400)
      const future = (yield* fetchJson(`${url}/api/logs?since=2999-01-01T00:00:00Z`)).body.data
      expect(future).toEqual([])

      const traceId = byExecution[0].traceId
      const inTrace = (yield* fetchJson(`${url}/observability/traces/${traceId}/logs`)).body.data
      expect(inTrace.count).toBe(inTrace.logs.length)
      expect(inTrace.logs.every((entry: any) => entry.traceId === traceId)).toBe(true)
      const spanId = byExecution[0].spanId
      const inSpan = (yield* fetchJson(`${url}/observability/spans/${spanId}/logs`)).body.data
      expect(inSpan.logs.every((entry: any) => entry.spanId === spanId)).toBe(true)
      const query = (yield* fetchJson(`${url}/observability/logs?traceId=${traceId}&level=info`)).body.data
      expect(query.length).toBe(inTrace.count)
    }))

  it.effect("/ws: connection test, echo, and an error for what is not JSON", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { messages, next, socket } = yield* Effect.promise(() => opened(`${wsUrl(url)}/ws`))
      const hello = yield* Effect.promise(() => next((m) => m.type === "CONNECTION_TEST"))
      expect(hello).toMatchObject({
        success: true,
        data: { authenticated: false, userId: null, timestamp: expect.any(String) }
      })
      socket.send(JSON.stringify({ ping: 1 }))
      expect(yield* Effect.promise(() => next((m) => m.type === "ECHO"))).toEqual({
        type: "ECHO",
        success: true,
        data: { ping: 1 }
      })
      socket.send("not json")
      expect(yield* Effect.promise(() => next((m) => m.type === "ERROR"))).toEqual({
        type: "ERROR",
        success: false,
        error: "Invalid message format"
      })
      expect(messages).toHaveLength(3)
      socket.close()
    }))

  it.effect("/ws/logs: the initial batch, then each new matching entry", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { next, socket } = yield* Effect.promise(() => opened(`${wsUrl(url)}/ws/logs?agentId=assistant&limit=5`))
      const initial = yield* Effect.promise(() => next((m) => m.type === "initial"))
      expect(initial.logs.length).toBeLessThanOrEqual(5)
      expect(initial.logs.every((entry: any) => entry.agentId === "assistant")).toBe(true)
      yield* fetchJson(
        `${url}/agents/assistant/text`,
        json({ input: "live log", options: { conversationId: "ws-live" } })
      )
      const update = yield* Effect.promise(() =>
        next((m) => m.type === "update" && m.logs[0].conversationId === "ws-live")
      )
      expect(update.logs[0]).toMatchObject({ agentId: "assistant", message: "agent call completed" })
      socket.close()
    }))

  it.effect("/ws/observability: span starts and ends and logs of the chosen entity only", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { messages, next, socket } = yield* Effect.promise(() =>
        opened(`${wsUrl(url)}/ws/observability?entityType=workflow&entityId=approval`)
      )
      yield* Effect.promise(() => next((m) => m.type === "CONNECTION_SUCCESS"))
      yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "not watched" }))
      yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 1 } }))
      const start = yield* Effect.promise(() =>
        next((m) => m.type === "OBSERVABILITY_EVENT" && m.data.type === "span:start")
      )
      const end = yield* Effect.promise(() =>
        next((m) => m.type === "OBSERVABILITY_EVENT" && m.data.type === "span:end")
      )
      yield* Effect.promise(() => next((m) => m.type === "OBSERVABILITY_LOG"))
      for (const event of [start, end]) {
        expect(event.data.span.attributes).toMatchObject({ "entity.type": "workflow", "entity.id": "approval" })
      }
      expect(end.data.span.durationMs).toBeGreaterThanOrEqual(0)
      const entities = messages.filter((m) => m.type !== "CONNECTION_SUCCESS").map((m) =>
        m.type === "OBSERVABILITY_LOG" ? m.data.workflowId : m.data.span.attributes["entity.id"]
      )
      expect(new Set(entities)).toEqual(new Set(["approval"]))
      socket.close()
    }))

  it.effect("a client that disconnects releases its subscriptions", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const live = () => fetchJson(`${url}/observability/status`).pipe(Effect.map((r) => r.body.data.liveSubscribers))
      const sockets = yield* Effect.promise(() =>
        Promise.all([
          opened(`${wsUrl(url)}/ws/logs`),
          opened(`${wsUrl(url)}/ws/logs?level=error`),
          opened(`${wsUrl(url)}/ws/observability?entityType=agent`)
        ])
      )
      yield* Effect.promise(() =>
        Promise.all(sockets.map((s) => s.next((m) => m.type === "initial" || m.type === "CONNECTION_SUCCESS")))
      )
      expect(yield* live()).toEqual({ logs: 3, spans: 1 })
      sockets.forEach((s) => s.socket.close())
      const released = yield* Effect.promise(async () => {
        for (let i = 0; i < 100; i++) {
          const now = await fetch(`${url}/observability/status`).then((r) => r.json())
          if (now.data.liveSubscribers.logs === 0 && now.data.liveSubscribers.spans === 0) {
            return now.data.liveSubscribers
          }
          await new Promise((r) => setTimeout(r, 20))
        }
        return "still subscribed"
      })
      expect(released).toEqual({ logs: 0, spans: 0 })
    }))

  it.effect("no token or key from a query string appears in any stored span or log", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const echo = yield* Effect.promise(() => opened(`${wsUrl(url)}/ws?token=SECRET-TOKEN-VALUE`))
      yield* Effect.promise(() => echo.next((m) => m.type === "CONNECTION_TEST"))
      echo.socket.close()
      const logs = yield* Effect.promise(() => opened(`${wsUrl(url)}/ws/logs?key=SECRET-KEY-VALUE&dev=true`))
      yield* Effect.promise(() => logs.next((m) => m.type === "initial"))
      logs.socket.close()
      yield* fetchJson(`${url}/tools?token=SECRET-TOKEN-VALUE&key=SECRET-KEY-VALUE`)
      yield* Effect.sleep("100 millis")

      const list = (yield* fetchJson(`${url}/observability/traces?limit=500`)).body.data
      let stored = ""
      for (const trace of list.traces) {
        stored += JSON.stringify((yield* fetchJson(`${url}/observability/traces/${trace.traceId}`)).body.data)
      }
      stored += JSON.stringify((yield* fetchJson(`${url}/api/logs?limit=1000`)).body.data)
      expect(stored).toContain("/ws")
      expect(stored).not.toContain("SECRET-TOKEN-VALUE")
      expect(stored).not.toContain("SECRET-KEY-VALUE")
    }))
})

layer(TestServerLive({ config: { retention: { maxTraces: 3, maxAgeMs: 3_600_000 } } }), { excludeTestServices: true })(
  "trace retention",
  (it) => {
    it.effect("keeps at most maxTraces traces, dropping the oldest", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        for (let i = 0; i < 12; i++) yield* fetchJson(`${url}/tools/add/execute`, json({ input: { a: i, b: 1 } }))
        const status = (yield* fetchJson(`${url}/observability/status`)).body.data
        // Pruning runs after writes, so a few traces newer than the last prune may be present.
        expect(status.traceCount).toBeLessThan(12)
        const first = (yield* fetchJson(`${url}/observability/traces?limit=500`)).body.data
        expect(first.total).toBe(first.traces.length)
      }))
  }
)

const rsa = await generateKeyPair("RS256", { extractable: true })
const publicKey = await exportSPKI(rsa.publicKey)
const token = await new SignJWT({ sub: "ada" }).setProtectedHeader({ alg: "RS256" }).setIssuedAt().setExpirationTime(
  "1h"
).sign(rsa.privateKey)

layer(
  TestServerLive({
    config: {
      production: true,
      auth: {
        production: true,
        consoleKey: Redacted.make("console-key"),
        jwt: { secret: Redacted.make(publicKey), defaultPrivate: false, publicRoutes: [] }
      }
    }
  }),
  { excludeTestServices: true }
)("console and socket authentication in production", (it) => {
  it.effect("console routes need the key (header or ?key=); /ws takes ?token= and refuses a bad one", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect(yield* fetchJson(`${url}/observability/status`)).toMatchObject({
        status: 401,
        body: { error: "Console access key required" }
      })
      expect((yield* fetchJson(`${url}/observability/status`, { headers: { "x-service-dev": "true" } })).status).toBe(
        401
      )
      expect((yield* fetchJson(`${url}/api/logs`, { headers: { "x-console-access-key": "wrong" } })).body.error).toBe(
        "Invalid console access key"
      )
      expect(
        (yield* fetchJson(`${url}/observability/status`, { headers: { "x-console-access-key": "console-key" } })).status
      ).toBe(200)
      expect((yield* fetchJson(`${url}/metrics`)).status).toBe(401)
      const metrics = yield* fetchJson(`${url}/metrics`, { headers: { "x-console-access-key": "console-key" } })
      expect(metrics.status).toBe(200)
      expect(metrics.body).toContain("http_server_request_duration_count{")

      expect(yield* Effect.promise(() => openSocket(`${wsUrl(url)}/ws/logs`))).toEqual({ refused: 401 })
      expect(yield* Effect.promise(() => openSocket(`${wsUrl(url)}/ws/observability?dev=true`))).toEqual({
        refused: 401
      })
      const keyed = yield* Effect.promise(() => opened(`${wsUrl(url)}/ws/logs?key=console-key`))
      yield* Effect.promise(() => keyed.next((m) => m.type === "initial"))
      keyed.socket.close()

      expect(yield* Effect.promise(() => openSocket(`${wsUrl(url)}/ws?token=garbage`))).toEqual({ refused: 401 })
      const anonymous = yield* Effect.promise(() => opened(`${wsUrl(url)}/ws`))
      expect((yield* Effect.promise(() => anonymous.next((m) => m.type === "CONNECTION_TEST"))).data.authenticated)
        .toBe(false)
      anonymous.socket.close()
      const authenticated = yield* Effect.promise(() => opened(`${wsUrl(url)}/ws?token=${token}`))
      expect((yield* Effect.promise(() => authenticated.next((m) => m.type === "CONNECTION_TEST"))).data).toMatchObject(
        {
          authenticated: true,
          userId: "ada"
        }
      )
      authenticated.socket.close()
    }))
})

/** A local OTLP/HTTP receiver that counts the spans it is sent. */
const receiver = Layer.scoped(
  TestServer,
  Effect.gen(function*() {
    const received = yield* otlpReceiver
    const spans = () =>
      received.traces.flatMap((body) => body.resourceSpans ?? []).flatMap((resource: any) => resource.scopeSpans ?? [])
        .reduce((count: number, scope: any) => count + (scope.spans ?? []).length, 0)
    const service = yield* Layer.build(TestServerLive({ config: { otlpEndpoint: received.url } }))
    const inner = yield* Effect.provide(TestServer, service)
    return { ...inner, logs: [], config: { ...inner.config, counted: spans } as any }
  })
)

layer(receiver, { excludeTestServices: true })("OTLP export", (it) => {
  it.effect("with OTEL_EXPORTER_OTLP_ENDPOINT spans are also exported over OTLP/HTTP", () =>
    Effect.gen(function*() {
      const { config, url } = yield* TestServer
      yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "export me" }))
      const counted = yield* Effect.promise(async () => {
        for (let i = 0; i < 60 && (config as any).counted() === 0; i++) await new Promise((r) => setTimeout(r, 100))
        return (config as any).counted()
      })
      expect(counted).toBeGreaterThan(0)
    }))
})
