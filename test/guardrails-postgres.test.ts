import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { blocklist, regexRedactor } from "../src/agents/guardrails/Guardrail.js"
import { defineApp } from "../src/App.js"
import { defineTool } from "../src/tools/Tool.js"
import { fakeModelSettings, FakeProvider, FakeProviderLive, postSse } from "./support/fakeProvider.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

// The `blocked` history status through the Postgres store (the SQLite side is test/guardrails.test.ts).

const agent = defineAgent({
  id: "careful",
  name: "Careful",
  purpose: "Blocks a word",
  instructions: "Be brief.",
  memory: true,
  outputGuardrails: [blocklist(["forbidden"], "Off limits").output]
})

// Issue #42 item 6: a redacted tool result, and its digest in memory, through the Postgres store.
const redacting = defineAgent({
  id: "redacting",
  name: "Redacting",
  purpose: "Reports the weather behind a redactor",
  instructions: "Be brief.",
  memory: true,
  tools: [defineTool({
    name: "get_weather",
    description: "Current weather for a location",
    parameters: Schema.Struct({ location: Schema.String }),
    execute: ({ location }) => ({ forecast: `sunny in ${location}`, code: "SECRET-4242" })
  })],
  outputGuardrails: [regexRedactor(/SECRET-\d+/).output]
})

const filler = "the answer goes on for a while so that the hold back releases some words first and then"

const server = Layer.unwrapEffect(
  Effect.map(FakeProvider, (fake) =>
    PostgresTestServerLive({
      app: defineApp({ agents: [agent, redacting] }),
      config: { model: fakeModelSettings(fake) }
    }))
).pipe(
  Layer.provideMerge(FakeProviderLive)
)

describe.skipIf(!postgresAvailable)("guardrails on Postgres", () => {
  layer(server, { excludeTestServices: true })((it) => {
    it.effect("a blocked /text and a stream blocked mid-way are `blocked` history entries; memory keeps neither", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const conversationId = `pg-${crypto.randomUUID()}`
        const text = yield* fetchJson(
          `${url}/agents/careful/text`,
          json({ input: "say forbidden", options: { conversationId } })
        )
        expect(text.status).toBe(422)
        const stream = yield* postSse(`${url}/agents/careful/stream`, {
          input: `${filler} forbidden`,
          options: { conversationId }
        })
        const sent = stream.events.filter((event) => event.data.type === "text-delta").map((event) => event.data.delta)
          .join("")
        expect(stream.events.at(-1)!.data).toEqual({ type: "error", error: "Off limits", guardrail: "blocklist" })
        const history = yield* fetchJson(`${url}/agents/careful/history?conversationId=${conversationId}`)
        const entries = [...history.body.data.entries].reverse()
        expect(entries.map((entry: any) => [entry.status, entry.output])).toEqual([["blocked", null], [
          "blocked",
          sent
        ]])
        expect(entries[0].usage.totalTokens).toBeGreaterThan(0)
        const forgotten = yield* fetchJson(`${url}/agents/careful/conversations/${conversationId}`, {
          method: "DELETE"
        })
        expect(forgotten.body.data).toMatchObject({ deletedMessages: 0, deletedHistoryEntries: 2 })
      }))

    it.effect("a tool result is redacted; history keeps no secret; the redacted result sent back is the service's", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const conversationId = `pg-${crypto.randomUUID()}`
        const first = yield* fetchJson(
          `${url}/agents/redacting/text`,
          json({ input: "weather in Oslo", options: { conversationId } })
        )
        const [result] = first.body.data.toolResults
        expect(result.result).toEqual({ forecast: "sunny in Oslo", code: "[redacted]" })
        const history = yield* fetchJson(`${url}/agents/redacting/history?conversationId=${conversationId}`)
        expect(JSON.stringify(history.body)).not.toContain("SECRET-4242")
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
  })
})
