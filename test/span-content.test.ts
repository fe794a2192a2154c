import { describe, expect, it, layer, type Vitest } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { ConfigFile, resolveServerConfig } from "../src/config/ServerConfig.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

const SECRET = "zebra-passphrase-7731"

/** The trace of an agent call in `conversationId` (its memory span names it), once its model span is stored. */
const modelSpanOf = (url: string, conversationId: string, route: "text" | "stream" = "text") =>
  Effect.gen(function*() {
    const call = yield* fetchJson(
      `${url}/agents/assistant/${route}`,
      json({ input: `remember ${SECRET}`, options: { conversationId } })
    )
    expect(call.status).toBe(200)
    const streamed = route === "stream"
    const isModel = (span: any) =>
      span.attributes?.["gen_ai.operation.name"] === "chat" &&
      (span.attributes["gen_ai.request.stream"] === true) === streamed
    const deadline = Date.now() + 20_000
    while (true) {
      const traces =
        (yield* fetchJson(`${url}/observability/traces?entityType=agent&entityId=assistant&limit=50`)).body.data.traces
      for (const summary of traces) {
        const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
        const model = trace.spans.find(isModel)
        const memory = trace.spans.find((span: any) => span.attributes?.conversationId === conversationId)
        if (model !== undefined && memory !== undefined) return { trace, model }
      }
      if (Date.now() > deadline) throw new Error("the agent call's model span was not stored within 20 s")
      yield* Effect.sleep("50 millis")
    }
  })

const withoutContent = (it: Vitest.MethodsNonLive<TestServer, true>) =>
  it.effect(
    "by default model spans keep lengths and token counts, never the prompt or the completion",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const { model, trace } = yield* modelSpanOf(url, "span-default")
        expect(model.attributes["gen_ai.prompt.characters"]).toBeGreaterThanOrEqual(`remember ${SECRET}`.length)
        expect(model.attributes["gen_ai.completion.characters"]).toBeGreaterThan(0)
        expect(model.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0)
        expect(model.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0)
        expect(model.attributes).not.toHaveProperty("gen_ai.prompt")
        expect(model.attributes).not.toHaveProperty("gen_ai.completion")
        // Nowhere in the trace: not on the model span, nor on any other.
        expect(JSON.stringify(trace)).not.toContain(SECRET)

        const streamed = yield* modelSpanOf(url, "span-default-stream", "stream")
        expect(streamed.model.attributes["gen_ai.prompt.characters"]).toBeGreaterThanOrEqual(
          `remember ${SECRET}`.length
        )
        expect(streamed.model.attributes["gen_ai.completion.characters"]).toBeGreaterThan(0)
        expect(streamed.model.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0)
        expect(JSON.stringify(streamed.trace)).not.toContain(SECRET)
      }),
    60_000
  )

layer(TestServerLive(), { excludeTestServices: true })("prompts in spans (SQLite, default)", withoutContent)

layer(TestServerLive({ config: { recordContent: true } }), { excludeTestServices: true })(
  "prompts in spans (recordContent)",
  (it) => {
    it.effect("with recordContent, model spans also keep the prompt and the completion", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const { model } = yield* modelSpanOf(url, "span-recorded")
        expect(model.attributes["gen_ai.prompt.characters"]).toBeGreaterThanOrEqual(`remember ${SECRET}`.length)
        expect(model.attributes["gen_ai.prompt"]).toContain(SECRET)
        expect(typeof model.attributes["gen_ai.completion"]).toBe("string")
        expect(model.attributes["gen_ai.completion"].length).toBeGreaterThan(0)
        const streamed = yield* modelSpanOf(url, "span-recorded-stream", "stream")
        expect(streamed.model.attributes["gen_ai.prompt"]).toContain(SECRET)
        expect(streamed.model.attributes["gen_ai.completion"].length).toBe(
          streamed.model.attributes["gen_ai.completion.characters"]
        )
      }), 60_000)
  }
)

describe.skipIf(!postgresAvailable)("on Postgres", () => {
  layer(PostgresTestServerLive(), { excludeTestServices: true })("prompts in spans (Postgres, default)", withoutContent)
})

describe("the recordContent setting", () => {
  it("is off by default; the config file or OBSERVABILITY_RECORD_CONTENT turns it on; other values are refused", () => {
    expect(resolveServerConfig({}, {}).recordContent).toBe(false)
    expect(resolveServerConfig({ observability: { recordContent: true } }, {}).recordContent).toBe(true)
    expect(resolveServerConfig({}, { OBSERVABILITY_RECORD_CONTENT: "true" }).recordContent).toBe(true)
    expect(
      resolveServerConfig({ observability: { recordContent: true } }, { OBSERVABILITY_RECORD_CONTENT: "false" })
        .recordContent
    ).toBe(false)
    expect(() => resolveServerConfig({}, { OBSERVABILITY_RECORD_CONTENT: "yes please" })).toThrow(
      /OBSERVABILITY_RECORD_CONTENT/
    )
  })

  it("retention defaults: executions 30 days / 100,000, conversations 90 days / no count; the config file sets them", () => {
    const day = 24 * 3600 * 1000
    expect(resolveServerConfig({}, {}).recordRetention).toEqual({
      executions: { maxCount: 100_000, maxAgeMs: 30 * day },
      conversations: { maxCount: undefined, maxAgeMs: 90 * day }
    })
    const file = Schema.decodeUnknownSync(ConfigFile)({
      retention: { executions: { maxCount: 10, maxAgeHours: 1 }, conversations: { maxCount: 5 } }
    })
    expect(resolveServerConfig(file, {}).recordRetention).toEqual({
      executions: { maxCount: 10, maxAgeMs: 3600 * 1000 },
      conversations: { maxCount: 5, maxAgeMs: 90 * day }
    })
    expect(() => Schema.decodeUnknownSync(ConfigFile)({ retention: { executions: { maxCount: 0 } } })).toThrow()
    expect(() => Schema.decodeUnknownSync(ConfigFile, { onExcessProperty: "error" })({ retention: { logs: {} } }))
      .toThrow()
  })
})
