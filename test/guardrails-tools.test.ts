import { NodeSocket } from "@effect/platform-node"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { expect, layer } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Chunk, Context, Effect, Layer, Schema, Stream } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { blocklist, regexRedactor } from "../src/agents/guardrails/Guardrail.js"
import { MemoryStore } from "../src/agents/memory/MemoryStore.js"
import { defineApp } from "../src/App.js"
import { RPC_PATH, ServiceRpcs } from "../src/rpc/RpcContract.js"
import { defineTool } from "../src/tools/Tool.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { send, TestChat } from "./support/chat.js"
import { AgentTestServerLive, FakeProvider, postSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// Issue #42 item 6, settled 12: output guardrails run on tool results as well as text, on every door;
// the model itself still reads the raw result. The fake calls get_weather for "weather in X", then
// answers "The tool said: <result>".

const SECRET = /SECRET-4242/

const weather = defineTool({
  name: "get_weather",
  description: "Current weather for a location",
  parameters: Schema.Struct({ location: Schema.String }),
  execute: ({ location }) => ({ forecast: `sunny in ${location}`, code: "SECRET-4242" })
})

const refund = defineTool({
  name: "refund",
  description: "Refunds an amount",
  parameters: Schema.Struct({ amount: Schema.Number }),
  execute: () => Effect.fail(new Error("card SECRET-4242 declined"))
})

const add = defineTool({
  name: "add",
  description: "Adds two numbers",
  parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
  execute: ({ a, b }) => `forbidden ${a + b}`
})

const blocking = defineAgent({
  id: "blocking",
  name: "Blocking",
  purpose: "Adds behind a blocklist",
  instructions: "Be brief.",
  tools: [add],
  outputGuardrails: [blocklist(["forbidden"], "That topic is off limits").output]
})

const redacting = defineAgent({
  id: "redacting",
  name: "Redacting",
  purpose: "Reports the weather behind a redactor",
  instructions: "Be brief.",
  memory: true,
  tools: [weather, refund],
  outputGuardrails: [regexRedactor(/SECRET-\d+/, "[redacted]", "secrets").output]
})

const forecast = workflow({
  id: "forecast",
  name: "Forecast",
  purpose: "asks the redacting agent",
  input: Schema.Struct({ q: Schema.String }),
  result: Schema.String
})
  .andAgent({ id: "ask", agent: redacting, prompt: ({ data }) => data.q })

const app = defineApp({ agents: [redacting, blocking], workflows: [forecast] })

const stored = (conversationId: string) =>
  Effect.gen(function*() {
    const { services } = yield* TestServer
    const memory = Context.unsafeGet(services as Context.Context<MemoryStore>, MemoryStore)
    return yield* memory.load("redacting", conversationId, { limit: 100, maxBytes: 64 * 1024 * 1024 })
  })

layer(AgentTestServerLive(app), { excludeTestServices: true })("output guardrails on tool results", (it) => {
  it.effect("/text: toolResults are redacted; the model read the raw result; history and memory keep no secret", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const fake = yield* FakeProvider
      fake.reset()
      const conversationId = `t-${crypto.randomUUID()}`
      const response = yield* fetchJson(
        `${url}/agents/redacting/text`,
        json({ input: "weather in Oslo", options: { conversationId } })
      )
      expect(response.status).toBe(200)
      expect(response.body.data.toolResults).toEqual([
        {
          toolCallId: expect.any(String),
          toolName: "get_weather",
          result: { forecast: "sunny in Oslo", code: "[redacted]" }
        }
      ])
      expect(JSON.stringify(response.body)).not.toMatch(SECRET)
      expect(JSON.stringify(fake.requests)).toMatch(SECRET)
      const history = yield* fetchJson(`${url}/agents/redacting/history?conversationId=${conversationId}`)
      expect(JSON.stringify(history.body)).not.toMatch(SECRET)
      expect(JSON.stringify(yield* stored(conversationId))).not.toMatch(SECRET)

      // The redacted result, sent back as the conversation's tool traffic, is the one the service produced.
      const [result] = response.body.data.toolResults
      const again = yield* fetchJson(
        `${url}/agents/redacting/text`,
        json({
          input: [
            {
              role: "assistant",
              content: [{
                type: "tool-call",
                toolCallId: result.toolCallId,
                toolName: "get_weather",
                input: { location: "Oslo" }
              }]
            },
            {
              role: "tool",
              content: [{
                type: "tool-result",
                toolCallId: result.toolCallId,
                toolName: "get_weather",
                output: { type: "json", value: result.result }
              }]
            },
            { role: "user", content: "thanks" }
          ],
          options: { conversationId }
        })
      )
      expect(again.status).toBe(200)
    }))

  it.effect("/stream: the tool-result frame is redacted", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* postSse(`${url}/agents/redacting/stream`, { input: "weather in Oslo" })
      expect(response.status).toBe(200)
      const frame = response.events.find((event) => event.data.type === "tool-result")
      expect(frame?.data.result).toEqual({ forecast: "sunny in Oslo", code: "[redacted]" })
      expect(response.text).not.toMatch(SECRET)
      expect(response.events.at(-1)!.data.type).toBe("finish")
    }))

  it.effect("/stream: a tool's error is redacted; a blocked tool result ends the stream before its frame", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const failed = yield* postSse(`${url}/agents/redacting/stream`, { input: "refund 5" })
      expect(failed.events.find((event) => event.data.type === "tool-result")?.data.result).toEqual({
        error: "Tool refund failed: card [redacted] declined"
      })
      expect(failed.text).not.toMatch(SECRET)
      const blocked = yield* postSse(`${url}/agents/blocking/stream`, { input: "add 1 and 2" })
      expect(blocked.text).not.toContain("forbidden")
      expect(blocked.events.at(-1)!.data).toEqual({
        type: "error",
        error: "That topic is off limits",
        guardrail: "blocklist"
      })
      const whole = yield* fetchJson(`${url}/agents/blocking/text`, json({ input: "add 1 and 2" }))
      expect(whole.status).toBe(422)
      expect(whole.body.errorDetail.fields).toEqual({ guardrail: "blocklist", stage: "output" })
    }))

  it.effect("/chat: the tool part's output is redacted, and the conversation sent back with it goes on", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const conversationId = `t-${crypto.randomUUID()}`
      const chat = new TestChat(conversationId, `${url}/agents/redacting/chat`)
      yield* send(chat, () => chat.sendMessage({ text: "weather in Oslo" }))
      const tool = chat.messages[1]!.parts.find((part) => part.type === "tool-get_weather") as
        | { output?: unknown }
        | undefined
      expect(tool?.output).toEqual({ forecast: "sunny in Oslo", code: "[redacted]" })
      expect(JSON.stringify(chat.messages)).not.toMatch(SECRET)
      yield* send(chat, () => chat.sendMessage({ text: "thanks" }))
      expect(chat.messages).toHaveLength(4)
      expect(JSON.stringify(chat.messages)).not.toMatch(SECRET)
    }))

  it.scoped("RPC AgentStream (the /rpc WebSocket): the tool-result event is redacted", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const protocol = yield* Layer.build(
        RpcClient.layerProtocolSocket({ retryTransientErrors: false }).pipe(
          Layer.provide(NodeSocket.layerWebSocket(`${url.replace(/^http/, "ws")}${RPC_PATH}`)),
          Layer.provide(RpcSerialization.layerJson)
        )
      )
      const client = yield* Effect.provide(RpcClient.make(ServiceRpcs), protocol)
      const events = yield* Effect.map(
        Stream.runCollect(client.AgentStream({ agentId: "redacting", input: "weather in Oslo" })),
        Chunk.toReadonlyArray
      )
      expect(events.find((event) => event.type === "tool-result")).toMatchObject({ result: { code: "[redacted]" } })
      expect(JSON.stringify(events)).not.toMatch(SECRET)
    }))

  it.scoped("MCP agent_<id> and a workflow's andAgent answer without the secret", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const client = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const client = new Client({ name: "test-client", version: "1.0.0" })
          await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp/default/mcp`)))
          return client
        }),
        (client) => Effect.promise(() => client.close())
      )
      const result = yield* Effect.promise(() =>
        client.callTool({ name: "agent_redacting", arguments: { input: "weather in Oslo" } })
      )
      expect(result.isError).not.toBe(true)
      expect(JSON.stringify(result)).toContain("[redacted]")
      expect(JSON.stringify(result)).not.toMatch(SECRET)
      const run = yield* fetchJson(`${url}/workflows/forecast/execute`, json({ input: { q: "weather in Oslo" } }))
      expect(run.status).toBe(200)
      expect(run.body.data.result).toContain("[redacted]")
      expect(JSON.stringify(run.body)).not.toMatch(SECRET)
    }))
})
