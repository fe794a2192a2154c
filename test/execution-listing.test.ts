import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import { storageKind } from "../src/storage/Sql.js"
import type { ExecutionStatus } from "../src/workflows/api/WorkflowSchemas.js"
import { type Execution, type ExecutionQuery, ExecutionStore } from "../src/workflows/execution/ExecutionStore.js"
import { ExecutionStoreLive, listingQuery } from "../src/workflows/execution/ExecutionStoreLive.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

const COUNT = 600
const WORKFLOWS = ["alpha", "beta", "gamma"]
const STATUSES: ReadonlyArray<ExecutionStatus> = ["completed", "suspended", "error", "cancelled", "running"]

// Three executions share each creation time and ids are not in creation order, so the id tie-break
// of the order shows; ids are digits only, so SQLite and Postgres collations order them alike.
const seeded = Array.from({ length: COUNT }, (_, i): Execution => {
  const at = new Date(Date.parse("2026-03-01T00:00:00.000Z") + Math.floor(i / 3) * 1000).toISOString()
  return {
    id: `e${String((i * 7919) % 100_003).padStart(6, "0")}`,
    workflowId: WORKFLOWS[i % 3],
    workflowName: `Workflow ${WORKFLOWS[i % 3]}`,
    status: STATUSES[i % 5],
    input: { i },
    context: {},
    user: null,
    stepIndex: 0,
    stepData: {},
    currentData: { i },
    output: { i },
    metadata: { traceId: "t", spanId: "s" },
    version: 1,
    lastSeq: 1,
    createdAt: at,
    updatedAt: at
  }
})

const expected = (query: ExecutionQuery): ReadonlyArray<string> =>
  seeded
    .filter((e) =>
      (query.workflowId === undefined || e.workflowId === query.workflowId) &&
      (query.status === undefined || e.status === query.status) &&
      (query.from === undefined || e.createdAt > query.from) &&
      (query.to === undefined || e.createdAt < query.to)
    )
    .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1))
    .slice(query.offset, query.offset + query.limit)
    .map((e) => e.id)

const FROM = "2026-03-01T00:00:20.500Z"
const TO = "2026-03-01T00:02:40.000Z"
const filters: ReadonlyArray<Omit<ExecutionQuery, "limit" | "offset">> = [
  {},
  { workflowId: "beta" },
  { status: "error" },
  { workflowId: "gamma", status: "completed" },
  { from: FROM, to: TO },
  { workflowId: "alpha", from: FROM },
  { status: "running", to: TO }
]

/** The plan of the listing statement, one line per step. */
const planOf = (url: string, query: ExecutionQuery) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (storageKind(url) === "sqlite") {
      const rows = yield* sql<{ detail: string }>`EXPLAIN QUERY PLAN ${listingQuery(sql, query)}`
      return rows.map((row) => row.detail)
    }
    // A table this small is cheaper to scan; what matters is that the index serves the query shape.
    return yield* sql.withTransaction(Effect.gen(function*() {
      yield* sql`SET LOCAL enable_seqscan = off`
      const rows = yield* sql<{ "QUERY PLAN": string }>`EXPLAIN ${listingQuery(sql, query)}`
      return rows.map((row) => row["QUERY PLAN"])
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
    for (const filter of filters) {
      const total = expected({ ...filter, limit: COUNT, offset: 0 }).length
      for (const offset of [0, 1, 37, Math.max(0, total - 50), Math.max(0, total - 7), total, total + 10]) {
        const query = { ...filter, limit: 50, offset }
        const page = yield* store.list(query)
        expect(page.map((e) => e.id), JSON.stringify(query)).toEqual(expected(query))
      }
    }
    const [first] = yield* store.list({ workflowId: "beta", status: "error", limit: 1, offset: 0 })
    const source = seeded.find((e) => e.id === first.id)!
    expect(first).toEqual({
      id: source.id,
      workflowId: "beta",
      workflowName: "Workflow beta",
      status: "error",
      input: source.input,
      metadata: source.metadata,
      output: undefined,
      createdAt: source.createdAt,
      updatedAt: source.updatedAt,
      historyBytes: expect.any(Number)
    })

    for (const filter of filters.slice(0, 4)) {
      const plan = (yield* planOf(url, { ...filter, limit: 50, offset: 500 })).join("\n")
      expect(plan, JSON.stringify(filter)).toMatch(/workflow_executions_listing/)
      if (storageKind(url) === "sqlite") {
        expect(plan).toMatch(/COVERING INDEX workflow_executions_listing/)
        expect(plan).not.toMatch(/^SCAN workflow_executions$/m)
      }
    }
  }).pipe(Effect.provide(ExecutionStoreLive.pipe(Layer.provideMerge(DatabaseLive(url)))))

describe("execution listing: pages in order at any depth, found in a covering index", () => {
  it.scoped("on SQLite", () => Effect.flatMap(tempDir, (dir) => exercise(`file:${join(dir, "listing.db")}`)), 60_000)
  it.scoped.skipIf(!postgresAvailable)("on Postgres", () => Effect.flatMap(freshPostgresDatabase, exercise), 60_000)
})
