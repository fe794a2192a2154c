import { describe, expect, layer } from "@effect/vitest"
import { simulateReadableStream } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { Effect } from "effect"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { postSse } from "./support/fakeProvider.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

/** An agent on a 6-line model (`LanguageModelV3`) still runs on `ai` 7 (docs/decisions.md, "Issue #32: the AI SDK 7 line"). */

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined }
}
const finishReason = { unified: "stop", raw: "stop" } as const

const v3 = new MockLanguageModelV3({
  modelId: "v3-model",
  doGenerate: async () => ({ content: [{ type: "text", text: "hello from v3" }], finishReason, usage, warnings: [] }),
  doStream: async () => ({
    stream: simulateReadableStream({
      chunks: [
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "streamed " },
        { type: "text-delta", id: "t", delta: "from v3" },
        { type: "text-end", id: "t" },
        { type: "finish", finishReason, usage }
      ]
    })
  })
})

const legacy = defineAgent({
  id: "legacy",
  name: "Legacy",
  purpose: "Answers on a 6-line model",
  instructions: "Be brief.",
  model: v3
})

describe("agent models of the 6 line", () => {
  layer(TestServerLive({ app: defineApp({ agents: [legacy] }) }), { excludeTestServices: true })("on ai 7", (it) => {
    it.effect("a LanguageModelV3 answers /text and /stream, with the agent's instructions as the system message", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const text = yield* fetchJson(`${url}/agents/legacy/text`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ input: "hi" })
        })
        expect(text.status).toBe(200)
        expect(text.body.data).toMatchObject({ text: "hello from v3", usage: { promptTokens: 3, completionTokens: 2 } })
        expect(v3.doGenerateCalls.at(-1)?.prompt[0]).toEqual({ role: "system", content: "Be brief." })

        const stream = yield* postSse(`${url}/agents/legacy/stream`, { input: "hi" })
        expect(stream.status).toBe(200)
        const deltas = stream.events.flatMap(({ data }) => (data.type === "text-delta" ? [data.delta] : []))
        expect(deltas.join("")).toBe("streamed from v3")
        expect(v3.doStreamCalls).toHaveLength(1)
      }))
  })
})
