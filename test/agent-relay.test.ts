import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { nodeFetch } from "../src/agents/models/nodeFetch.js"
import { defineApp } from "../src/App.js"
import { assistant } from "../src/examples/agents.js"
import { AgentTestServerLive, FakeProvider, parseSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer } from "./support/TestServer.js"

const app = defineApp({ agents: [assistant] })

const CONCURRENT = 12

/** Reads an SSE response until a frame of `type` has arrived; returns the frames so far, the reader still open. */
const readUntil = async (response: Response, type: string) => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`the stream ended before a ${type} frame: ${text}`)
    text += decoder.decode(value, { stream: true })
    const events = parseSse(text)
    if (events.some((event) => event.data.type === type)) return { reader, events }
  }
}

const waitFor = async (condition: () => boolean, what: string) => {
  const deadline = Date.now() + 20_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

layer(AgentTestServerLive(app), { excludeTestServices: true })("the agent relay", (it) => {
  it.effect("/stream: the first text-delta frame is sent while the model is still answering", () =>
    Effect.gen(function*() {
      const fake = yield* FakeProvider
      fake.reset()
      const { url } = yield* TestServer
      const frames = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/agents/assistant/stream`, json({ input: "answer slowly please" }))
        const { events, reader } = await readUntil(response, "text-delta")
        await reader.cancel()
        return events
      })
      expect(frames.map((frame) => frame.data.type)).not.toContain("finish")
      expect(frames[0]).toMatchObject({ id: "0", data: { type: "text-delta" } })
      // The fake counts a client that left before its last word: the model had not finished.
      yield* Effect.promise(() => waitFor(() => fake.closedEarly() === 1, "the model request to be aborted"))
    }))

  it.effect("/stream under concurrency: history and memory are committed when the finish frame arrives", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const results = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: CONCURRENT }, async (_, i) => {
          const conversationId = `stream-commit-${i}`
          const response = await fetch(
            `${url}/agents/assistant/stream`,
            json({ input: `hello ${i}`, options: { conversationId, userId: "streamer" } })
          )
          const { reader } = await readUntil(response, "finish")
          // Read while the response is still open: the finish frame must already be durable.
          const history = await fetch(`${url}/agents/assistant/history?conversationId=${conversationId}`).then((r) =>
            r.json()
          )
          await reader.cancel()
          return { i, entries: history.data.entries }
        }))
      )
      for (const { entries, i } of results) {
        expect(entries).toHaveLength(1)
        expect(entries[0]).toMatchObject({
          status: "completed",
          output: `You said: hello ${i}`,
          conversationId: `stream-commit-${i}`
        })
      }
      const fake = yield* FakeProvider
      fake.reset()
      yield* fetchJson(
        `${url}/agents/assistant/text`,
        json({ input: "again", options: { conversationId: "stream-commit-3" } })
      )
      expect(fake.requests[0].messages.map((m: any) => m.content).slice(1)).toEqual([
        "hello 3",
        "You said: hello 3",
        "again"
      ])
    }))

  it.effect("/text under concurrency: each answer's history and memory are committed when it arrives", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const results = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: CONCURRENT }, async (_, i) => {
          const conversationId = `text-commit-${i}`
          await fetch(`${url}/agents/assistant/text`, json({ input: `hi ${i}`, options: { conversationId } })).then((
            r
          ) => r.json())
          const history = await fetch(`${url}/agents/assistant/history?conversationId=${conversationId}`).then((r) =>
            r.json()
          )
          return { i, entries: history.data.entries }
        }))
      )
      for (const { entries, i } of results) {
        expect(entries).toMatchObject([{ status: "completed", output: `You said: hi ${i}` }])
      }
    }))

  it.effect("nodeFetch: answers, statuses and headers as fetch does; an abort mid-body fails the body with the reason", () =>
    Effect.gen(function*() {
      const fake = yield* FakeProvider
      const models = yield* Effect.promise(() =>
        nodeFetch(`${fake.url}/v1/models`, { headers: new Headers({ accept: "application/json" }) })
      )
      expect(models.status).toBe(200)
      expect(models.headers.get("content-type")).toBe("application/json")
      expect(yield* Effect.promise(() => models.json())).toMatchObject({ object: "list" })
      const missing = yield* Effect.promise(() => nodeFetch(`${fake.url}/nope`, { method: "POST", body: "{}" }))
      expect(missing.status).toBe(404)
      expect(yield* Effect.promise(() => missing.text())).toContain("not found")

      const controller = new AbortController()
      const failure = yield* Effect.promise(async () => {
        const response = await nodeFetch(`${fake.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "slowly" }] }),
          signal: controller.signal
        })
        const reader = response.body!.getReader()
        await reader.read()
        controller.abort()
        return reader.read().then(() => undefined, (error: unknown) => error)
      })
      expect((failure as Error | undefined)?.name).toBe("AbortError")
      const aborted = yield* Effect.promise(() =>
        nodeFetch(`${fake.url}/v1/models`, { signal: AbortSignal.abort() }).catch((e) => e)
      )
      expect((aborted as Error).name).toBe("AbortError")
    }))
})
