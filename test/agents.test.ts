import { expect, layer } from "@effect/vitest"
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from "ai"
import { Ajv2020 } from "ajv/dist/2020.js"
import { Effect, Either, Layer } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import * as Errors from "../src/core/errors.js"
import { assistant } from "../src/examples/agents.js"
import { whoami } from "../src/examples/tools.js"
import { AgentTestServerLive, FakeProvider, FakeProviderLive, postSse } from "./support/fakeProvider.js"
import { fetchJson, json, makeClient, TestServer, TestServerLive } from "./support/TestServer.js"

const helper = defineAgent({
  id: "helper",
  name: "Helper",
  purpose: "Answers delegated tasks",
  instructions: "You help.",
  memory: false
})

const coordinator = defineAgent({
  id: "coordinator",
  name: "Coordinator",
  purpose: "Hands work to sub-agents",
  instructions: ({ context }) => `Coordinate. Reply in ${String(context.language ?? "English")}.`,
  subAgents: [helper]
})

const app = defineApp({ agents: [assistant, coordinator], tools: [whoami] })

const personSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    age: { type: "integer", minimum: 0 },
    tags: { type: "array", items: { type: "string" } }
  },
  required: ["name", "age", "tags"],
  additionalProperties: false
}

layer(AgentTestServerLive(app), { excludeTestServices: true })(
  "agents over HTTP with an OpenAI-compatible provider",
  (it) => {
    it.effect("GET /agents and /agents/:id describe the agents", () =>
      Effect.gen(function*() {
        const client = yield* makeClient
        const agents = yield* client.agents.listAgents()
        expect(agents.map((a) => a.id)).toEqual(["assistant", "coordinator", "helper"])
        const summary = agents[0]
        expect(summary).toMatchObject({
          id: "assistant",
          name: "Assistant",
          status: "idle",
          model: "fake-model",
          memory: { config: { storage: "sqlite", contextLimit: 10 } },
          subAgents: []
        })
        expect(summary.tools.map((t) => t.name)).toEqual(["get_weather", "add"])
        expect(summary.tools[0].parameters).toMatchObject({ type: "object", required: ["location"] })
        expect(agents[1].subAgents.map((a) => a.id)).toEqual(["helper"])
        expect(agents[2].memory).toBeNull()

        const details = yield* client.agents.getAgent({ path: { id: "assistant" } })
        expect(details.tools).toEqual(["get_weather", "add"])
        expect(details.instructions).toContain("helpful assistant")
        const coordinatorDetails = yield* client.agents.getAgent({ path: { id: "coordinator" } })
        expect(coordinatorDetails.instructions).toBe("(dynamic)")
        expect(coordinatorDetails.tools).toEqual(["delegate_task"])

        const missing = yield* Effect.either(client.agents.getAgent({ path: { id: "nope" } }))
        expect(Either.isLeft(missing) && missing.left).toEqual(new Errors.NotFound({ message: "Agent nope not found" }))
      }))

    it.effect("GET /tools lists the agent's tools with their owner", () =>
      Effect.gen(function*() {
        const client = yield* makeClient
        const tools = yield* client.tools.listTools()
        expect(tools.map((t) => [t.name, t.agents])).toEqual([
          ["get_weather", [{ id: "assistant", name: "Assistant" }]],
          ["add", [{ id: "assistant", name: "Assistant" }]],
          ["whoami", []]
        ])
      }))

    it.effect("POST /text: answer, usage, defaults sent to the provider, system prompt from instructions", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        fake.reset()
        const client = yield* makeClient
        const result = yield* client.agents.generateText({
          path: { id: "assistant" },
          payload: { input: "hello there" }
        })
        expect(result.text).toBe("You said: hello there")
        expect(result.finishReason).toBe("stop")
        expect(result.toolCalls).toEqual([])
        expect(result.usage.promptTokens).toBeGreaterThan(0)
        expect(result.usage.completionTokens).toBe(4)
        expect(result.usage.totalTokens).toBe(result.usage.promptTokens + result.usage.completionTokens)
        expect(result.usage).toMatchObject({ cachedInputTokens: 0, reasoningTokens: 0 })
        expect(result).not.toHaveProperty("experimental_output")
        const sent = fake.requests[0]
        expect(sent.temperature).toBe(0.7)
        expect(sent.max_tokens).toBe(4000)
        expect(sent.messages[0]).toMatchObject({
          role: "system",
          content: expect.stringContaining("helpful assistant")
        })
      }))

    it.effect("POST /text with tools: calls and results of every step, usage summed over steps", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        fake.reset()
        const { url } = yield* TestServer
        const response = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({ input: "what is the weather in Oslo?" })
        )
        expect(response.status).toBe(200)
        const data = response.body.data
        expect(data.toolCalls).toEqual([{ toolCallId: "call_1", toolName: "get_weather", args: { location: "Oslo" } }])
        expect(data.toolResults).toEqual([{
          toolCallId: "call_1",
          toolName: "get_weather",
          result: { location: "Oslo", temperatureC: 21, condition: "sunny" }
        }])
        expect(data.text).toBe("The tool said: {\"location\":\"Oslo\",\"temperatureC\":21,\"condition\":\"sunny\"}")
        expect(fake.requests).toHaveLength(2)
        expect(data.usage.completionTokens).toBe(1 + 4)

        const sum = yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "add 2 and 40" }))
        expect(sum.body.data.toolResults[0].result).toEqual({ sum: 42 })
      }))

    it.effect("maxSteps 1: the tool runs but no final answer follows", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({ input: "add 1 and 2", options: { maxSteps: 1 } })
        )
        expect(response.body.data).toMatchObject({ text: "", finishReason: "tool-calls" })
        expect(response.body.data.toolResults[0].result).toEqual({ sum: 3 })
      }))

    it.effect("bad options, bad input, unknown agent", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const hot = yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "x", options: { temperature: 2 } }))
        expect(hot).toMatchObject({
          status: 400,
          body: { success: false, error: "Input validation failed: options.temperature: must be a number from 0 to 1" }
        })
        const penalty = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({ input: "x", options: { presencePenalty: 3 } })
        )
        expect(penalty.body.error).toBe(
          "Input validation failed: options.presencePenalty: must be a number from 0 to 2"
        )
        const empty = yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "" }))
        expect(empty.status).toBe(400)
        expect(empty.body.error).toMatch(/^Input validation failed: input/)
        const none = yield* fetchJson(`${url}/agents/assistant/text`, json({ options: {} }))
        expect(none.body.error).toBe("Input validation failed: input: is missing")
        const unknown = yield* fetchJson(`${url}/agents/nope/text`, json({ input: "hi" }))
        expect(unknown).toMatchObject({ status: 404, body: { success: false, error: "Agent nope not found" } })
        const badAndUnknown = yield* fetchJson(`${url}/agents/nope/text`, json({ input: 5 }))
        expect(badAndUnknown.status).toBe(400)
      }))

    it.effect("input as UI messages and as model messages", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        fake.reset()
        const { url } = yield* TestServer
        const ui = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({
            input: [{ id: "m1", role: "user", parts: [{ type: "text", text: "from a UI" }] }]
          })
        )
        expect(ui.body.data.text).toBe("You said: from a UI")
        const model = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({
            input: [
              { role: "user", content: "first" },
              { role: "assistant", content: "noted" },
              { role: "user", content: [{ type: "text", text: "second" }] }
            ]
          })
        )
        expect(model.body.data.text).toBe("You said: second")
        expect(fake.requests[1].messages.slice(1).map((m: any) => m.role)).toEqual(["user", "assistant", "user"])
        const bad = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({ input: [{ role: "wizard", content: "x" }] })
        )
        expect(bad.status).toBe(400)
      }))

    it.effect("experimental_output: an object conforming to the schema, with tool calling still on", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        fake.reset()
        const { url } = yield* TestServer
        const response = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({
            input: "describe someone",
            options: { experimental_output: { type: "object", schema: personSchema } }
          })
        )
        expect(response.status).toBe(200)
        const validate = new Ajv2020().compile(personSchema)
        expect(validate(response.body.data.experimental_output)).toBe(true)
        expect(fake.requests[0].response_format?.type).toBe("json_schema")
        expect(fake.requests[0].tools?.map((t: any) => t.function.name)).toEqual(["get_weather", "add"])

        const text = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({
            input: "hi",
            options: { experimental_output: { type: "text" } }
          })
        )
        expect(text.body.data.experimental_output).toBe("You said: hi")
        const notObject = yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({
            input: "hi",
            options: { experimental_output: { type: "object", schema: { type: "string" } } }
          })
        )
        expect(notObject.status).toBe(400)
        expect(notObject.body.error).toMatch(/^Input validation failed: options\.experimental_output\.schema\.type: /)
      }))

    it.effect("POST /stream: numbered frames of exactly the documented types, nothing of the prompt", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const plain = yield* postSse(`${url}/agents/assistant/stream`, { input: "stream this please" })
        expect(plain.status).toBe(200)
        expect(plain.headers.get("content-type")).toMatch(/^text\/event-stream/)
        expect(plain.headers.get("cache-control")).toBe("no-cache")
        expect(plain.events.map((e) => Number(e.id))).toEqual(plain.events.map((_, i) => i))
        const deltas = plain.events.filter((e) => e.data.type === "text-delta")
        expect(deltas.length).toBeGreaterThan(2)
        expect(deltas.map((e) => e.data.delta).join("")).toBe("You said: stream this please")
        const finish = plain.events.at(-1)!.data
        expect(finish).toMatchObject({ type: "finish", finishReason: "stop", usage: { completionTokens: 5 } })
        expect(plain.text).not.toContain("helpful assistant")

        const tools = yield* postSse(`${url}/agents/assistant/stream`, { input: "weather in Rome?" })
        const types = tools.events.map((e) => e.data.type)
        for (const type of types) {
          expect(["text-delta", "reasoning-delta", "tool-call", "tool-result", "finish", "error"]).toContain(type)
        }
        expect(
          tools.events.find((e) => e.data.type === "tool-call")!.data
        ).toEqual({
          type: "tool-call",
          toolCallId: expect.any(String),
          toolName: "get_weather",
          args: { location: "Rome" }
        })
        expect(
          tools.events.find((e) => e.data.type === "tool-result")!.data.result
        ).toMatchObject({ location: "Rome" })
        expect(tools.text).not.toContain("helpful assistant")
      }))

    it.effect("POST /chat: the AI SDK's own client reads the UI message stream", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const raw = yield* postSse(`${url}/agents/assistant/chat`, {
          input: [{ id: "u1", role: "user", parts: [{ type: "text", text: "chat with me" }] }]
        })
        expect(raw.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1")
        expect(raw.text.trimEnd().endsWith("data: [DONE]")).toBe(true)

        const transport = new DefaultChatTransport<UIMessage>({
          api: `${url}/agents/assistant/chat`,
          prepareSendMessagesRequest: ({ messages }) => ({ body: { input: messages.slice(-1), options: {} } })
        })
        const last = yield* Effect.promise(async () => {
          const chunks = await transport.sendMessages({
            trigger: "submit-message",
            chatId: "chat-1",
            messageId: undefined,
            messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "what is the weather in Oslo?" }] }],
            abortSignal: undefined
          })
          let message: UIMessage | undefined
          for await (const snapshot of readUIMessageStream({ stream: chunks })) message = snapshot
          return message!
        })
        expect(last.role).toBe("assistant")
        const toolPart = last.parts.find((p) => p.type === "tool-get_weather") as any
        expect(toolPart).toMatchObject({ state: "output-available", input: { location: "Oslo" } })
        const textPart = last.parts.filter((p) => p.type === "text").map((p: any) => p.text).join("")
        expect(textPart).toContain("The tool said:")
      }))

    it.effect("POST /object and /stream-object: objects valid against the schema; bad schemas are 400", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        fake.reset()
        const { url } = yield* TestServer
        const validate = new Ajv2020().compile(personSchema)
        const one = yield* fetchJson(
          `${url}/agents/assistant/object`,
          json({ input: "a person", schema: personSchema })
        )
        expect(one.status).toBe(200)
        expect(validate(one.body.data)).toBe(true)
        expect(fake.requests[0].tools).toBeUndefined()

        const streamed = yield* postSse(`${url}/agents/assistant/stream-object`, {
          input: "a person",
          schema: personSchema
        })
        const types = streamed.events.map((e) => e.data.type)
        expect(types.at(-1)).toBe("finish")
        expect(types.slice(0, -1).every((t) => t === "partial")).toBe(true)
        const finish = streamed.events.at(-1)!.data
        expect(validate(finish.object)).toBe(true)
        expect(finish).toMatchObject({ finishReason: "stop", usage: { promptTokens: expect.any(Number) } })

        const notObject = yield* fetchJson(
          `${url}/agents/assistant/object`,
          json({ input: "x", schema: { type: "array" } })
        )
        expect(notObject).toMatchObject({
          status: 400,
          body: { error: expect.stringMatching(/^Input validation failed: schema\.type: /) }
        })
        const invalid = yield* fetchJson(
          `${url}/agents/assistant/object`,
          json({ input: "x", schema: { type: "object", properties: 3 } })
        )
        expect(invalid.status).toBe(400)
        expect(invalid.body.error).toMatch(/^Input validation failed: schema/)
        const missing = yield* fetchJson(`${url}/agents/assistant/stream-object`, json({ input: "x" }))
        expect(missing.body.error).toBe("Input validation failed: schema: is missing")
      }))

    it.effect("closing the request aborts the model request; the call is recorded as cancelled", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        fake.reset()
        const { url } = yield* TestServer
        const controller = new AbortController()
        const firstFrame = yield* Effect.promise(async () => {
          const response = await fetch(`${url}/agents/assistant/stream`, {
            ...json({ input: "talk slowly please", options: { userId: "aborter" } }),
            signal: controller.signal
          })
          const reader = response.body!.getReader()
          const { value } = await reader.read()
          controller.abort()
          return new TextDecoder().decode(value)
        })
        expect(firstFrame).toContain("text-delta")
        const closed = yield* Effect.promise(async () => {
          for (let i = 0; i < 200 && fake.closedEarly() === 0; i++) await new Promise((r) => setTimeout(r, 50))
          return fake.closedEarly()
        })
        expect(closed).toBe(1)
        const history = yield* fetchJson(`${url}/agents/assistant/history?userId=aborter`)
        expect(history.body.data.entries[0]).toMatchObject({ status: "cancelled", userId: "aborter" })
      }))

    it.effect("memory: the last contextLimit messages of a conversation reach the model; history pages", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        const { url } = yield* TestServer
        const say = (input: string, options: Record<string, unknown> = {}) =>
          fetchJson(
            `${url}/agents/assistant/text`,
            json({ input, options: { conversationId: "conv-1", userId: "ada", ...options } })
          )
        yield* say("my name is Ada")
        fake.reset()
        yield* say("what is my name?")
        expect(fake.requests[0].messages.map((m: any) => [m.role, m.content])).toEqual([
          ["system", expect.any(String)],
          ["user", "my name is Ada"],
          ["assistant", "You said: my name is Ada"],
          ["user", "what is my name?"]
        ])
        fake.reset()
        yield* say("and now?", { contextLimit: 1 })
        expect(fake.requests[0].messages.map((m: any) => m.content)).toEqual([
          expect.any(String),
          "You said: what is my name?",
          "and now?"
        ])
        fake.reset()
        yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "no conversation" }))
        expect(fake.requests[0].messages).toHaveLength(2)

        const page = yield* fetchJson(`${url}/agents/assistant/history?conversationId=conv-1&limit=2`)
        expect(page.body.data.pagination).toEqual({ page: 0, limit: 2, total: 3, totalPages: 2 })
        expect(page.body.data.entries.map((e: any) => e.input)).toEqual(["and now?", "what is my name?"])
        expect(page.body.data.entries[0]).toMatchObject({
          conversationId: "conv-1",
          userId: "ada",
          output: "You said: and now?",
          status: "completed",
          usage: { promptTokens: expect.any(Number) }
        })
        const second = yield* fetchJson(`${url}/agents/assistant/history?conversationId=conv-1&limit=2&page=1`)
        expect(second.body.data.entries.map((e: any) => e.input)).toEqual(["my name is Ada"])
        const clamped = yield* fetchJson(`${url}/agents/assistant/history?limit=5000`)
        expect(clamped.body.data.pagination.limit).toBe(100)
        const badLimit = yield* fetchJson(`${url}/agents/assistant/history?limit=abc`)
        expect(badLimit.status).toBe(400)
        expect((yield* fetchJson(`${url}/agents/nope/history`)).status).toBe(404)
      }))

    it.effect("sub-agents: delegate_task hands the task over; dynamic instructions read the context", () =>
      Effect.gen(function*() {
        const fake = yield* FakeProvider
        fake.reset()
        const { url } = yield* TestServer
        const response = yield* fetchJson(
          `${url}/agents/coordinator/text`,
          json({
            input: "please delegate \"summarise the news\" to helper",
            options: { context: { language: "Norwegian" } }
          })
        )
        expect(response.status).toBe(200)
        expect(response.body.data.toolResults[0]).toMatchObject({
          toolName: "delegate_task",
          result: [{ agentId: "helper", agentName: "Helper", response: "You said: summarise the news" }]
        })
        expect(fake.requests[0].messages[0].content).toBe("Coordinate. Reply in Norwegian.")
        expect(fake.requests.some((r) => r.messages[0].content === "You help.")).toBe(true)
      }))

    it.effect("GET /agents/:id/card is an A2A agent card", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const card = yield* fetchJson(`${url}/agents/assistant/card`)
        expect(card.body.data).toMatchObject({
          name: "Assistant",
          url: `${url}/agents/assistant`,
          capabilities: { streaming: true },
          defaultInputModes: ["text"],
          defaultOutputModes: ["text"],
          skills: [
            { id: "get_weather", name: "get_weather", tags: ["weather"] },
            { id: "add", name: "add", tags: ["math"] }
          ]
        })
        expect((yield* fetchJson(`${url}/agents/nope/card`)).status).toBe(404)
      }))

    it.effect("every agent call logs an entry carrying the agent and conversation ids", () =>
      Effect.gen(function*() {
        const { logs, url } = yield* TestServer
        yield* fetchJson(
          `${url}/agents/assistant/text`,
          json({ input: "log me", options: { conversationId: "logged" } })
        )
        expect(
          logs.some((line) =>
            line.includes("agent call completed") && line.includes("agentId=assistant") &&
            line.includes("conversationId=logged")
          )
        ).toBe(true)
      }))
  }
)

const brokenProvider = Layer.unwrapEffect(
  Effect.map(
    FakeProvider,
    (fake) =>
      TestServerLive({ config: { model: { provider: "openai-compatible", model: "m", baseUrl: `${fake.url}/wrong` } } })
  )
).pipe(Layer.provideMerge(FakeProviderLive))

layer(brokenProvider, { excludeTestServices: true })("a failing provider", (it) => {
  it.effect("is 500 'Agent <id> failed: ...' on /text and an error frame on /stream; history says error", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const text = yield* fetchJson(
        `${url}/agents/assistant/text`,
        json({ input: "hi", options: { userId: "broken" } })
      )
      expect(text.status).toBe(500)
      expect(text.body).toEqual({ success: false, error: expect.stringMatching(/^Agent assistant failed: not found/i) })
      const stream = yield* postSse(`${url}/agents/assistant/stream`, { input: "hi" })
      expect(stream.status).toBe(200)
      expect(stream.events.at(-1)!.data).toMatchObject({ type: "error", error: expect.stringMatching(/not found/i) })
      const history = yield* fetchJson(`${url}/agents/assistant/history?userId=broken`)
      expect(history.body.data.entries[0].status).toBe("error")
    }))
})

layer(TestServerLive(), { excludeTestServices: true })("the built-in model (no keys)", (it) => {
  it.effect("answers as builtin/echo, streams word by word and fills schemas", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const agents = yield* fetchJson(`${url}/agents`)
      expect(agents.body.data[0].model).toBe("builtin/echo")
      const text = yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "hello" }))
      expect(text.body.data.text).toBe("[builtin/echo] You said: hello")
      const sum = yield* fetchJson(`${url}/agents/assistant/text`, json({ input: "please add 2 and 3" }))
      expect(sum.body.data.toolResults[0]).toMatchObject({ toolName: "add", result: { sum: 5 } })
      const stream = yield* postSse(`${url}/agents/assistant/stream`, { input: "one two three" })
      expect(stream.events.filter((e) => e.data.type === "text-delta").length).toBeGreaterThan(3)
      const object = yield* fetchJson(`${url}/agents/assistant/object`, json({ input: "x", schema: personSchema }))
      expect(new Ajv2020().compile(personSchema)(object.body.data)).toBe(true)
    }))
})
