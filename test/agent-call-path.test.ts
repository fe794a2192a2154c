import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { defineApp } from "../src/App.js"
import { assistant } from "../src/examples/agents.js"
import { AgentTestServerLive, FakeProvider, parseSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

const app = defineApp({ agents: [assistant] })

/** Polls `get` until `found` holds (spans and logs are stored a little after the response). */
const eventually = <A>(get: Effect.Effect<A>, found: (value: A) => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    for (;;) {
      const value = yield* get
      if (found(value)) return value
      if (Date.now() > deadline) return yield* Effect.dieMessage("not stored within 20 s")
      yield* Effect.sleep("50 millis")
    }
  })

const traceOf = (url: string, conversationId: string, spanName: string) =>
  Effect.gen(function*() {
    const traces =
      (yield* fetchJson(`${url}/observability/traces?entityType=agent&entityId=assistant&limit=50`)).body.data.traces
    for (const { traceId } of traces) {
      const spans = (yield* fetchJson(`${url}/observability/traces/${traceId}`)).body.data.spans as Array<any>
      if (spans.some((span) => span.name === spanName) && JSON.stringify(spans).includes(conversationId)) return spans
    }
    return undefined
  })

layer(AgentTestServerLive(app), { excludeTestServices: true })("the agent call's path", (it) => {
  it.effect("/text: the model span is the agent span's child, and the call's log line carries the agent span", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const answer = yield* fetchJson(
        `${url}/agents/assistant/text`,
        json({ input: "hello", options: { conversationId: "path-text" } })
      )
      expect(answer.body.data.text).toBe("You said: hello")

      const spans = (yield* eventually(traceOf(url, "path-text", "chat fake-model"), (found) => found !== undefined))!
      const agentSpan = spans.find((span) => span.name === "AgentRegistry.text")
      const modelSpan = spans.find((span) => span.name === "chat fake-model")
      expect(modelSpan).toMatchObject({ parentSpanId: agentSpan.spanId, status: { code: "ok" } })
      expect(modelSpan.attributes).toMatchObject({ "entity.id": "assistant", "gen_ai.request.model": "fake-model" })
      expect(modelSpan.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0)

      const logs = yield* eventually(
        Effect.map(
          fetchJson(`${url}/api/logs?agentId=assistant&limit=100`),
          (response) => response.body.data as Array<any>
        ),
        (entries) => entries.some((entry) => entry.conversationId === "path-text")
      )
      const line = logs.find((entry) => entry.conversationId === "path-text")
      expect(line).toMatchObject({
        message: "agent call completed",
        traceId: agentSpan.traceId,
        spanId: agentSpan.spanId
      })
    }))

  it.effect("/stream: the model is called once, its span ends with the stream, and the events arrive in order", () =>
    Effect.gen(function*() {
      const fake = yield* FakeProvider
      fake.reset()
      const { url } = yield* TestServer
      const body = yield* Effect.promise(() =>
        fetch(`${url}/agents/assistant/stream`, json({ input: "hi there", options: { conversationId: "path-stream" } }))
          .then((r) => r.text())
      )
      const events = parseSse(body)
      expect(events.map((event) => event.data.type).filter((type) => type !== "text-delta")).toEqual(["finish"])
      expect(events.filter((event) => event.data.type === "text-delta").map((event) => event.data.delta).join("")).toBe(
        "You said: hi there"
      )
      expect(fake.requests).toHaveLength(1)

      const spans = (yield* eventually(traceOf(url, "path-stream", "chat fake-model"), (found) => found !== undefined))!
      const agentSpan = spans.find((span) => span.name === "AgentRegistry.stream")
      const modelSpan = spans.find((span) => span.name === "chat fake-model")
      expect(modelSpan).toMatchObject({ parentSpanId: agentSpan.spanId, status: { code: "ok" } })
      expect(modelSpan.attributes["gen_ai.completion.characters"]).toBe("You said: hi there".length)
    }))
})
