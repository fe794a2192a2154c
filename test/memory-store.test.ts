import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { join } from "node:path"
import type { HistoryEntry } from "../src/agents/AgentsSchemas.js"
import { MemoryStore, MemoryStoreLive } from "../src/agents/memory/MemoryStore.js"
import { DatabaseLive } from "../src/Database.js"
import { freshPostgresDatabase, postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { makeClient, tempDir } from "./support/TestServer.js"

const entry = (id: string, startTime: string, userId: string | null, conversationId: string | null): HistoryEntry => ({
  id,
  conversationId,
  userId,
  input: [{ role: "user", content: `input ${id}` }],
  output: `output ${id}`,
  status: "completed",
  startTime,
  endTime: startTime,
  usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3, cachedInputTokens: 0, reasoningTokens: 0 },
  toolCalls: [{ toolCallId: "c1", toolName: "add", args: { a: 1, b: 2 } }]
})

/** The same checks on whichever SQL store the URL names. */
const exercise = (url: string) =>
  Effect.gen(function*() {
    const store = yield* MemoryStore
    for (let i = 1; i <= 5; i++) {
      yield* store.append("agent-a", "conv", "ada", [
        { role: "user", content: `question ${i}` },
        { role: "assistant", content: `answer ${i}` }
      ])
    }
    yield* store.append("agent-b", "conv", "ada", [{ role: "user", content: "other agent" }])
    const last3 = yield* store.load("agent-a", "conv", { limit: 3, maxBytes: 1 << 20 })
    expect(last3.map((m) => m.content)).toEqual(["answer 4", "question 5", "answer 5"])
    expect(yield* store.load("agent-a", "nothing", { limit: 10, maxBytes: 1 << 20 })).toEqual([])

    yield* store.record("agent-a", entry("h1", "2026-01-01T00:00:01.000Z", "ada", "conv"))
    yield* store.record("agent-a", entry("h2", "2026-01-01T00:00:02.000Z", "bob", null))
    yield* store.record("agent-a", entry("h3", "2026-01-01T00:00:03.000Z", "ada", null))
    yield* store.record("agent-b", entry("h4", "2026-01-01T00:00:04.000Z", "ada", null))
    const all = yield* store.history("agent-a", { page: 0, limit: 10 })
    expect(all.total).toBe(3)
    expect(all.entries.map((e) => e.id)).toEqual(["h3", "h2", "h1"])
    expect(all.entries[2]).toEqual(entry("h1", "2026-01-01T00:00:01.000Z", "ada", "conv"))
    const page = yield* store.history("agent-a", { page: 1, limit: 2 })
    expect(page.entries.map((e) => e.id)).toEqual(["h1"])
    expect((yield* store.history("agent-a", { page: 0, limit: 10, userId: "ada" })).entries.map((e) => e.id)).toEqual([
      "h3",
      "h1"
    ])
    expect((yield* store.history("agent-a", { page: 0, limit: 10, conversationId: "conv" })).total).toBe(1)

    // A regenerated answer replaces the last one, and only when the last message is an answer (the owner's).
    const regenerated = (id: string, content: string, owner?: { userId: string | null }) =>
      store.saveCall("agent-a", entry(id, "2026-01-01T00:00:05.000Z", "ada", "conv"), {
        conversationId: "conv",
        userId: "ada",
        messages: [{ role: "assistant", content }],
        replacesLastAnswer: true,
        owner
      })
    yield* regenerated("h5", "answer 5 again", { userId: "bob" })
    expect((yield* store.load("agent-a", "conv", { limit: 3, maxBytes: 1 << 20 })).map((m) => m.content)).toEqual([
      "question 5",
      "answer 5",
      "answer 5 again"
    ])
    yield* regenerated("h6", "answer 5 once more", { userId: "ada" })
    expect((yield* store.load("agent-a", "conv", { limit: 3, maxBytes: 1 << 20 })).map((m) => m.content)).toEqual([
      "question 5",
      "answer 5",
      "answer 5 once more"
    ])
    yield* store.append("agent-a", "conv", "ada", [{ role: "user", content: "question 6" }])
    yield* regenerated("h7", "answer 6")
    expect((yield* store.load("agent-a", "conv", { limit: 3, maxBytes: 1 << 20 })).map((m) => m.content)).toEqual([
      "answer 5 once more",
      "question 6",
      "answer 6"
    ])
  }).pipe(Effect.provide(MemoryStoreLive.pipe(Layer.provide(DatabaseLive(url)))))

describe("MemoryStore", () => {
  it.scoped("on SQLite", () => Effect.flatMap(tempDir, (dir) => exercise(`file:${join(dir, "memory.db")}`)))
  it.scoped.skipIf(!postgresAvailable)("on Postgres", () => Effect.flatMap(freshPostgresDatabase, exercise))
})

describe.skipIf(!postgresAvailable)("the service on Postgres", () => {
  layer(PostgresTestServerLive(), { excludeTestServices: true })("DATABASE_URL=postgres://...", (it) => {
    it.effect("keeps conversation memory and history", () =>
      Effect.gen(function*() {
        const client = yield* makeClient
        const ask = (input: string) =>
          client.agents.generateText({
            path: { id: "assistant" },
            payload: { input, options: { conversationId: "pg", userId: "ada" } }
          })
        yield* ask("first words")
        const second = yield* ask("second words")
        expect(second.text).toBe("[builtin/echo] You said: second words")
        const agents = yield* client.agents.listAgents()
        expect(agents[0].memory?.config.storage).toBe("postgres")
        const history = yield* client.agents.agentHistory({
          path: { id: "assistant" },
          urlParams: { conversationId: "pg" }
        })
        expect(history.entries.map((e) => e.input)).toEqual(["second words", "first words"])
      }))
  })
})
