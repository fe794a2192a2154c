import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { join } from "node:path"
import { MemoryStore, MemoryStoreLive } from "../src/agents/memory/MemoryStore.js"
import { DatabaseLive } from "../src/Database.js"
import { storageKind } from "../src/storage/Sql.js"
import { type Execution, type ExecutionQuery, ExecutionStore } from "../src/workflows/execution/ExecutionStore.js"
import { ExecutionStoreLive, listingQuery } from "../src/workflows/execution/ExecutionStoreLive.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

// Executions of alice, bob and nobody (anonymous), interleaved, three per creation time.
const USERS = ["alice", "bob", undefined]
const seeded = Array.from({ length: 300 }, (_, i): Execution => {
  const at = new Date(Date.parse("2026-03-01T00:00:00.000Z") + Math.floor(i / 3) * 1000).toISOString()
  return {
    id: `e${String((i * 7919) % 100_003).padStart(6, "0")}`,
    workflowId: i % 2 === 0 ? "alpha" : "beta",
    workflowName: "Workflow",
    status: i % 4 === 0 ? "completed" : "suspended",
    input: { i },
    context: {},
    user: null,
    userId: USERS[i % 3],
    stepIndex: 0,
    stepData: {},
    currentData: { i },
    metadata: { traceId: "t", spanId: "s" },
    version: 1,
    lastSeq: 1,
    createdAt: at,
    updatedAt: at
  }
})

const expected = (query: ExecutionQuery) =>
  seeded
    .filter((e) =>
      (query.userId === undefined || (e.userId ?? null) === query.userId) &&
      (query.workflowId === undefined || e.workflowId === query.workflowId) &&
      (query.status === undefined || e.status === query.status)
    )
    .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1))
    .slice(query.offset, query.offset + query.limit)
    .map((e) => e.id)

/** The plan of a statement, one line per step (Postgres told not to prefer a scan of so small a table). */
const planOf = (url: string, statement: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (storageKind(url) === "sqlite") {
      const rows = yield* sql<{ detail: string }>`EXPLAIN QUERY PLAN ${statement(sql) as any}`
      return rows.map((row) => row.detail).join("\n")
    }
    return yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`SET LOCAL enable_seqscan = off`
      const rows = yield* sql<{ "QUERY PLAN": string }>`EXPLAIN ${statement(sql) as any}`
      return rows.map((row) => row["QUERY PLAN"]).join("\n")
    }))
  })

const exercise = (url: string) =>
  Effect.gen(function*() {
    const store = yield* ExecutionStore
    for (const e of seeded) {
      yield* store.create(e, [{
        type: "workflow-start",
        executionId: e.id,
        from: "workflow",
        timestamp: e.createdAt,
        status: "running"
      }])
    }
    expect((yield* store.get(seeded[0].id)).pipe((found) => found._tag === "Some" && found.value.userId)).toBe("alice")
    const filters: ReadonlyArray<Omit<ExecutionQuery, "limit" | "offset">> = [
      { userId: "alice" },
      { userId: "bob", workflowId: "beta" },
      { userId: null },
      { userId: "alice", status: "completed" },
      { userId: "nobody" }
    ]
    for (const filter of filters) {
      for (const offset of [0, 7, 90]) {
        const query = { ...filter, limit: 20, offset }
        expect((yield* store.list(query)).map((e) => e.id), JSON.stringify(query)).toEqual(expected(query))
      }
    }
    // A user's listing walks an index led by user_id, as the others walk 0006's.
    for (const filter of filters.slice(0, 3)) {
      const plan = yield* planOf(url, (sql) => listingQuery(sql, { ...filter, limit: 20, offset: 50 }))
      expect(plan, JSON.stringify(filter)).toMatch(/workflow_executions_listing_by_user/)
      if (storageKind(url) === "sqlite") expect(plan).toMatch(/COVERING INDEX workflow_executions_listing_by_user/)
    }

    // Memory: one conversation id, two owners, each reading only their own messages, through an index.
    const memory = yield* MemoryStore
    yield* memory.append("agent", "c1", "alice", [{ role: "user", content: "alice's" }])
    yield* memory.append("agent", "c1", "bob", [{ role: "user", content: "bob's" }])
    yield* memory.append("agent", "c1", undefined, [{ role: "user", content: "anonymous" }])
    expect(yield* memory.load("agent", "c1", { limit: 10, maxBytes: 1 << 20 }, { userId: "alice" })).toEqual([{
      role: "user",
      content: "alice's"
    }])
    expect(yield* memory.load("agent", "c1", { limit: 10, maxBytes: 1 << 20 }, { userId: "bob" })).toEqual([{
      role: "user",
      content: "bob's"
    }])
    expect(yield* memory.load("agent", "c1", { limit: 10, maxBytes: 1 << 20 }, { userId: null })).toEqual([{
      role: "user",
      content: "anonymous"
    }])
    expect(yield* memory.load("agent", "c1", { limit: 10, maxBytes: 1 << 20 })).toHaveLength(3)
    const plan = yield* planOf(url, (sql) =>
      sql`SELECT message FROM agent_messages WHERE agent_id = ${"agent"} AND conversation_id = ${"c1"} AND user_id = ${"alice"}
        ORDER BY id DESC LIMIT ${10}`)
    expect(plan).toMatch(/agent_messages_by_owner/)
  }).pipe(
    Effect.provide(Layer.mergeAll(ExecutionStoreLive, MemoryStoreLive).pipe(Layer.provideMerge(DatabaseLive(url))))
  )

describe("owned records in the stores: a user's listing and memory, through indexes led by the owner", () => {
  it.scoped("on SQLite", () => Effect.flatMap(tempDir, (dir) => exercise(`file:${join(dir, "owners.db")}`)), 60_000)
  it.scoped.skipIf(!postgresAvailable)("on Postgres", () => Effect.flatMap(freshPostgresDatabase, exercise), 60_000)
})
