import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { FakeOpenAI } from "../scripts/fake-openai.js"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive, parseSse, postSse } from "./support/fakeProvider.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, TestServer, TestServerLive, type TestServerOptions } from "./support/TestServer.js"

// Issue #32 item 4: an agent's model list, over real HTTP to the fake provider failing on cue
// (scripts/fake-openai.ts `cueOf`: the model name says how to fail).

const modelsOf = (fake: FakeOpenAI) => {
  const provider = createOpenAICompatible({
    name: "fake",
    baseURL: `${fake.url}/v1`,
    includeUsage: true,
    supportsStructuredOutputs: true
  })
  return (id: string) => provider.chatModel(id)
}

const agentsFor = (fake: FakeOpenAI) => {
  const model = modelsOf(fake)
  const agent = (id: string, models: ReadonlyArray<string>, fallback?: Parameters<typeof defineAgent>[0]["fallback"]) =>
    defineAgent({
      id,
      name: id,
      purpose: "fallback test",
      instructions: "Be brief.",
      model: models.map(model),
      fallback
    })
  // Nothing listens on port 9 of the loopback: connecting is refused at once.
  const refused = createOpenAICompatible({ name: "down", baseURL: "http://127.0.0.1:9/v1" }).chatModel("down-model")
  return [
    agent("on-429", ["fail-429", "fake-model"]),
    agent("on-429-short", ["fail-429-1x-ra1", "fake-model"]),
    agent("on-500", ["fail-500-2x", "fake-model"]),
    agent("on-500-always", ["fail-500", "fake-model"]),
    agent("on-stall", ["stall", "fake-model"], { firstTokenTimeout: "300 millis" }),
    agent("on-400", ["fail-400", "fake-model"]),
    agent("on-break", ["break-after-first", "fake-model"]),
    agent("on-reset", ["reset-1x", "fake-model"]),
    defineAgent({ id: "single", name: "s", purpose: "p", instructions: "Be brief.", model: model("fake-model") }),
    defineAgent({
      id: "single-sdk",
      name: "s",
      purpose: "p",
      instructions: "Be brief.",
      model: model("fail-500-1x-s")
    }),
    defineAgent({
      id: "single-policy",
      name: "s",
      purpose: "p",
      instructions: "Be brief.",
      model: model("fail-500-1x-p"),
      fallback: {}
    }),
    defineAgent({
      id: "on-refused",
      name: "r",
      purpose: "p",
      instructions: "Be brief.",
      model: [refused, model("fake-model")]
    })
  ]
}

const serverOn = <E>(make: (options: TestServerOptions) => Layer.Layer<TestServer, E>) =>
  Layer.unwrapEffect(
    Effect.map(FakeProvider, (fake) =>
      make({ app: defineApp({ agents: agentsFor(fake) }), config: { model: fakeModelSettings(fake) } }))
  ).pipe(
    Layer.provideMerge(FakeProviderLive)
  )

const requestsFor = (fake: FakeOpenAI, model: string) =>
  fake.requests.filter((request) => request.model === model).length

/** The stored trace of the agent's call, once its agent span and `spans` model spans are in. */
const traceOf = (url: string, agentId: string, modelSpans: number, wrapped = true) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    while (true) {
      const traces =
        (yield* fetchJson(`${url}/observability/traces?entityType=agent&entityId=${agentId}&limit=10`)).body.data.traces
      for (const summary of traces) {
        const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
        const chats = trace.spans.filter((span: any) => span.attributes?.["gen_ai.operation.name"] === "chat")
        const call = trace.spans.find((span: any) => span.attributes?.["gen_ai.operation.name"] === "invoke_agent")
        if (
          call !== undefined && chats.length >= modelSpans &&
          (!wrapped || call.attributes["gen_ai.response.model"] !== undefined)
        ) {
          return { call, chats }
        }
      }
      if (Date.now() > deadline) throw new Error(`the trace of ${agentId} was not stored within 20 s`)
      yield* Effect.sleep("50 millis")
    }
  })

describe("model fallback", () => {
  it("an empty model list is refused when the agent is defined", () => {
    expect(() => defineAgent({ id: "none", name: "n", purpose: "p", instructions: "i", model: [] })).toThrow(
      "an empty model list"
    )
  })

  layer(serverOn((options) => TestServerLive(options)), { excludeTestServices: true })(
    "over the fake provider",
    (it) => {
      it.effect("a 429 whose Retry-After is beyond the maximum delay falls over to the next model at once", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const response = yield* fetchJson(`${url}/agents/on-429/text`, json({ input: "hello" }))
          expect(response.status).toBe(200)
          expect(response.body.data.text).toBe("You said: hello")
          expect(response.body.data.model).toEqual({ provider: "fake", modelId: "fake-model" })
          // One try: no retry against a Retry-After of 60 s, and the SDK's own retries are off.
          expect(requestsFor(fake, "fail-429")).toBe(1)
          expect(requestsFor(fake, "fake-model")).toBe(1)

          const { call, chats } = yield* traceOf(url, "on-429", 2)
          expect(chats.map((span: any) => span.name).sort()).toEqual(["chat fail-429", "chat fake-model"])
          expect(chats.find((span: any) => span.name === "chat fail-429").status).not.toBe("ok")
          expect(call.attributes["gen_ai.model.attempts"]).toBe(2)
          expect(call.attributes["gen_ai.response.model"]).toBe("fake/fake-model")

          const history = yield* fetchJson(`${url}/agents/on-429/history`)
          expect(history.body.data.entries[0].model).toEqual({ provider: "fake", modelId: "fake-model" })
          expect(history.body.data.entries[0].usage.promptTokens).toBeGreaterThan(0)

          const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text()))
          const objectStream = yield* postSse(`${url}/agents/on-429/stream-object`, {
            input: "hello",
            schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
          })
          expect(objectStream.events.find(({ data }) => data.type === "finish")?.data.model).toEqual({
            provider: "fake",
            modelId: "fake-model"
          })

          const fallbacks = metrics.split("\n").find((line) =>
            /^gen_ai_client_model_fallbacks_total\{/.test(line) && line.includes(`gen_ai_agent_id="on-429"`)
          )
          expect(fallbacks).toContain(`error_type="429"`)
          expect(fallbacks).toContain(`gen_ai_request_model="fail-429"`)
          expect(Number(fallbacks?.split(" ").at(-1))).toBeGreaterThanOrEqual(1)
        }))

      it.effect("a 429 with a short Retry-After is retried on the same model after that wait", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const started = Date.now()
          const response = yield* fetchJson(`${url}/agents/on-429-short/text`, json({ input: "hello" }))
          expect(response.status).toBe(200)
          expect(Date.now() - started).toBeGreaterThanOrEqual(1000)
          expect(response.body.data.model).toEqual({ provider: "fake", modelId: "fail-429-1x-ra1" })
          expect(requestsFor(fake, "fail-429-1x-ra1")).toBe(2)
        }))

      it.effect("a 500 is retried with back-off and the same model answers", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const response = yield* fetchJson(`${url}/agents/on-500/text`, json({ input: "hello" }))
          expect(response.status).toBe(200)
          expect(response.body.data.model).toEqual({ provider: "fake", modelId: "fail-500-2x" })
          expect(requestsFor(fake, "fail-500-2x")).toBe(3)
          const { call, chats } = yield* traceOf(url, "on-500", 3)
          expect(chats.filter((span: any) => span.name === "chat fail-500-2x")).toHaveLength(3)
          expect(call.attributes["gen_ai.model.attempts"]).toBe(3)
        }))

      it.effect("a model failing with 500 on every retry falls over to the next", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const stream = yield* postSse(`${url}/agents/on-500-always/stream`, { input: "hello" })
          expect(stream.status).toBe(200)
          const finish = stream.events.find(({ data }) => data.type === "finish")
          expect(finish?.data.model).toEqual({ provider: "fake", modelId: "fake-model" })
          expect(requestsFor(fake, "fail-500")).toBe(3)
        }))

      it.effect("a model that sends no first token within firstTokenTimeout falls over (text and stream)", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const text = yield* fetchJson(`${url}/agents/on-stall/text`, json({ input: "hello" }))
          expect(text.status).toBe(200)
          expect(text.body.data.model).toEqual({ provider: "fake", modelId: "fake-model" })
          const stream = yield* postSse(`${url}/agents/on-stall/stream`, { input: "hello" })
          const deltas = stream.events.flatMap(({ data }) => (data.type === "text-delta" ? [data.delta] : []))
          expect(deltas.join("")).toBe("You said: hello")
          expect(stream.events.find(({ data }) => data.type === "finish")?.data.model).toEqual({
            provider: "fake",
            modelId: "fake-model"
          })
        }))

      it.effect("a refused connection falls over", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const response = yield* fetchJson(`${url}/agents/on-refused/text`, json({ input: "hello" }))
          expect(response.status).toBe(200)
          expect(response.body.data.model).toEqual({ provider: "fake", modelId: "fake-model" })
        }))

      it.effect("a connection dropped before the first token is retried", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const stream = yield* postSse(`${url}/agents/on-reset/stream`, { input: "hello" })
          expect(stream.events.find(({ data }) => data.type === "finish")?.data.model).toEqual({
            provider: "fake",
            modelId: "reset-1x"
          })
          expect(requestsFor(fake, "reset-1x")).toBe(2)
        }))

      it.effect("a 400 fails at once: no retry, no fallback", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const before = requestsFor(fake, "fake-model")
          const response = yield* fetchJson(`${url}/agents/on-400/text`, json({ input: "hello" }))
          expect(response.status).toBeGreaterThanOrEqual(400)
          expect(JSON.stringify(response.body)).toContain("failing on cue")
          expect(requestsFor(fake, "fail-400")).toBe(1)
          expect(requestsFor(fake, "fake-model")).toBe(before)
        }))

      it.effect("a stream that fails after its first text reached the client ends with an error frame, not another model", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const before = requestsFor(fake, "fake-model")
          const stream = yield* postSse(`${url}/agents/on-break/stream`, { input: "hello there" })
          expect(stream.status).toBe(200)
          const types = stream.events.map(({ data }) => data.type)
          expect(types[0]).toBe("text-delta")
          expect(types).toContain("error")
          expect(types).not.toContain("finish")
          expect(requestsFor(fake, "break-after-first")).toBe(1)
          expect(requestsFor(fake, "fake-model")).toBe(before)
        }))

      it.effect("one model without a policy is left to the SDK's own retries; with a policy it is wrapped", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const fake = yield* FakeProvider
          const plain = yield* fetchJson(`${url}/agents/single-sdk/text`, json({ input: "hello" }))
          expect(plain.status).toBe(200)
          expect(plain.body.data.model).toEqual({ provider: "fake", modelId: "fail-500-1x-s" })
          expect(requestsFor(fake, "fail-500-1x-s")).toBe(2)
          const wrapped = yield* fetchJson(`${url}/agents/single-policy/text`, json({ input: "hello" }))
          expect(wrapped.status).toBe(200)
          expect(requestsFor(fake, "fail-500-1x-p")).toBe(2)
          const { call } = yield* traceOf(url, "single-policy", 2)
          expect(call.attributes["gen_ai.model.attempts"]).toBe(2)

          // The SDK retried (a chat span per try, as before); the wrapper's attributes are absent.
          const sdk = yield* traceOf(url, "single-sdk", 2, false)
          expect(sdk.chats).toHaveLength(2)
          expect(sdk.call.attributes["gen_ai.model.attempts"]).toBeUndefined()
        }))

      it.effect("the chat stream's finish names the model; a one-model agent's result names its model", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const chat = yield* Effect.promise(() =>
            fetch(`${url}/agents/on-429/chat`, json({ input: "hello" })).then((r) => r.text())
          )
          const finish = parseSse(chat).find(({ data }) => data.type === "finish")
          expect(finish?.data.messageMetadata).toEqual({ model: { provider: "fake", modelId: "fake-model" } })

          const plain = yield* fetchJson(`${url}/agents/single/text`, json({ input: "hello" }))
          expect(plain.body.data.model).toEqual({ provider: "fake", modelId: "fake-model" })
          const summary = yield* fetchJson(`${url}/agents/on-429`)
          expect(summary.body.data.model).toBe("fail-429, fake-model")

          // /doc shows the new field of the result and of the history entry.
          const spec = (yield* fetchJson(`${url}/doc`)).body
          expect(spec.components.schemas.ModelRef.properties).toHaveProperty("modelId")
          expect(spec.components.schemas.TextGenerationResult.properties.model).toEqual({
            $ref: "#/components/schemas/ModelRef"
          })
          expect(spec.components.schemas.AgentHistoryEntry.properties.model).toEqual({
            $ref: "#/components/schemas/ModelRef"
          })
        }))
    }
  )
})

describe.skipIf(!postgresAvailable)("model fallback on Postgres", () => {
  layer(serverOn((options) => PostgresTestServerLive(options)), { excludeTestServices: true })("history", (it) => {
    it.effect("the history entry names the model that answered; the usage beside it reads as before", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        expect((yield* fetchJson(`${url}/agents/on-429/text`, json({ input: "hello" }))).status).toBe(200)
        expect((yield* fetchJson(`${url}/agents/on-400/text`, json({ input: "hello" }))).status).toBeGreaterThanOrEqual(
          400
        )
        const entries = (yield* fetchJson(`${url}/agents/on-429/history`)).body.data.entries
        expect(entries[0].model).toEqual({ provider: "fake", modelId: "fake-model" })
        expect(Object.keys(entries[0].usage).sort()).toEqual([
          "cachedInputTokens",
          "completionTokens",
          "promptTokens",
          "reasoningTokens",
          "totalTokens"
        ])
        const failed = (yield* fetchJson(`${url}/agents/on-400/history`)).body.data.entries
        expect(failed[0].status).toBe("error")
        expect(failed[0].model).toBeUndefined()
      }))
  })
})
