import { Migrator, SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { join } from "node:path"
import { serviceMigrations as migrations } from "../src/Database.js"
import { DatabaseLive } from "../src/Database.js"
import type { SpanRecord } from "../src/observability/Span.js"
import { listTraces, makeSpanIndexer, pruneTraces, traceCounts } from "../src/observability/traceIndex.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString()

const span = (
  traceId: string,
  spanId: string,
  options: { parent?: string; name?: string; start: number; end?: number; error?: boolean; entity?: [string, string] }
): SpanRecord => ({
  traceId,
  spanId,
  parentSpanId: options.parent ?? null,
  name: options.name ?? spanId,
  kind: "internal",
  startTime: at(options.start),
  endTime: at(options.end ?? options.start + 1),
  durationMs: 1000,
  status: { code: options.error ? "error" : "ok" },
  attributes: options.entity ? { "entity.type": options.entity[0], "entity.id": options.entity[1] } : {},
  events: []
})

/** Stores spans the way the TraceStore's writer does: span rows and the trace index in one transaction. */
const write = (spans: ReadonlyArray<SpanRecord>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.withTransaction(Effect.gen(function*() {
      for (const s of spans) {
        yield* sql`INSERT INTO observability_spans ${
          sql.insert({
            span_id: s.spanId,
            trace_id: s.traceId,
            parent_span_id: s.parentSpanId,
            name: s.name,
            kind: s.kind,
            start_time: s.startTime,
            end_time: s.endTime!,
            duration_ms: 1000,
            status_code: s.status.code,
            status_message: null,
            attributes: JSON.stringify(s.attributes),
            events: "[]",
            entity_type: (s.attributes["entity.type"] as string | undefined) ?? null,
            entity_id: (s.attributes["entity.id"] as string | undefined) ?? null
          })
        }`
      }
      yield* makeSpanIndexer(sql)(spans)
    }))
  })

const contract = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // A workflow trace arriving in two batches, its root last (the HTTP span ends after its children);
  // an agent is called inside it. A second, failed agent trace; a third trace with no entity.
  yield* write([
    span("t1", "step", { parent: "drive", start: 3, entity: ["workflow", "approval"] }),
    span("t1", "agent-call", { parent: "step", start: 4, entity: ["agent", "assistant"] })
  ])
  yield* write([
    span("t1", "drive", { parent: "root", start: 2, end: 9, entity: ["workflow", "approval"] }),
    span("t1", "root", { name: "POST /workflows/approval/execute", start: 1, end: 10 }),
    span("t2", "root2", { name: "POST /agents/assistant/text", start: 20, error: true }),
    span("t2", "agent2", { parent: "root2", start: 21, entity: ["agent", "assistant"] }),
    span("t3", "lonely", { start: 30 })
  ])

  const all = yield* listTraces(sql, { limit: 10, offset: 0 })
  expect(all.total).toBe(3)
  expect(all.traces.map((t) => t.traceId)).toEqual(["t3", "t2", "t1"])
  expect(all.traces[2]).toEqual({
    traceId: "t1",
    name: "POST /workflows/approval/execute",
    entityType: "workflow",
    entityId: "approval",
    startTime: at(1),
    endTime: at(10),
    durationMs: 9000,
    status: "ok",
    spanCount: 4
  })
  expect(all.traces[1]).toMatchObject({ status: "error", entityType: "agent", spanCount: 2 })
  expect(all.traces[0]).toMatchObject({ name: "lonely", entityType: null, spanCount: 1 })

  // Any span's entity finds the trace: the agent called inside the workflow finds t1 too.
  const byAgent = yield* listTraces(sql, { entityType: "agent", entityId: "assistant", limit: 10, offset: 0 })
  expect(byAgent.total).toBe(2)
  expect(byAgent.traces.map((t) => t.traceId)).toEqual(["t2", "t1"])
  const byType = yield* listTraces(sql, { entityType: "workflow", limit: 10, offset: 0 })
  expect(byType).toMatchObject({ total: 1, traces: [{ traceId: "t1" }] })
  const page = yield* listTraces(sql, { limit: 1, offset: 1 })
  expect(page).toMatchObject({ total: 3, traces: [{ traceId: "t2" }] })
  expect(yield* traceCounts(sql)).toEqual({ traceCount: 3, spanCount: 7 })

  // Retention: the oldest beyond maxTraces go, with their spans and entity rows; then everything by age.
  yield* pruneTraces(sql, { maxTraces: 1, maxAgeMs: 365 * 24 * 3600_000 * 100 })
  expect((yield* listTraces(sql, { limit: 10, offset: 0 })).traces.map((t) => t.traceId)).toEqual(["t3"])
  const [{ n }] = yield* sql<
    { n: number | string }
  >`SELECT COUNT(*) AS n FROM observability_spans WHERE trace_id <> 't3'`
  expect(Number(n)).toBe(0)
  expect((yield* listTraces(sql, { entityType: "agent", limit: 10, offset: 0 })).total).toBe(0)
  yield* pruneTraces(sql, { maxTraces: 10, maxAgeMs: 1 })
  expect(yield* traceCounts(sql)).toEqual({ traceCount: 0, spanCount: 0 })
})

describe("trace index", () => {
  it.scoped("SQLite: summaries, entity filters, pages, counts and retention", () =>
    Effect.gen(function*() {
      const url = `file:${join(yield* tempDir, "traces.db")}`
      yield* Effect.provide(contract, DatabaseLive(url))
    }))

  it.scoped.skipIf(!postgresAvailable)(
    "Postgres: summaries, entity filters, pages, counts and retention",
    () =>
      Effect.gen(function*() {
        const url = yield* freshPostgresDatabase
        yield* Effect.provide(contract, DatabaseLive(url))
      }),
    30_000
  )

  it.scoped("spans stored before the index existed are indexed by its migration", () =>
    Effect.gen(function*() {
      const url = `file:${join(yield* tempDir, "old.db")}`
      const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0005"))
      // Spans written with the schema of migrations 0001-0004 only; then the store is opened normally.
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrator.make({})({ loader: Migrator.fromRecord(before) })
        for (
          const s of [
            span("old", "child", { parent: "root", start: 2, entity: ["agent", "assistant"] }),
            span("old", "root", { name: "POST /agents/assistant/text", start: 1, end: 5, error: true })
          ]
        ) {
          yield* sql`INSERT INTO observability_spans ${
            sql.insert({
              span_id: s.spanId,
              trace_id: s.traceId,
              parent_span_id: s.parentSpanId,
              name: s.name,
              kind: s.kind,
              start_time: s.startTime,
              end_time: s.endTime!,
              duration_ms: 1000,
              status_code: s.status.code,
              status_message: null,
              attributes: "{}",
              events: "[]",
              entity_type: (s.attributes["entity.type"] as string | undefined) ?? null,
              entity_id: (s.attributes["entity.id"] as string | undefined) ?? null
            })
          }`
        }
      }).pipe(Effect.provide(SqliteClient.layer({ filename: url.slice("file:".length) })), Effect.scoped)
      const listed = yield* Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (sql) => listTraces(sql, { entityType: "agent", limit: 10, offset: 0 })),
        DatabaseLive(url)
      )
      expect(listed).toEqual({
        total: 1,
        traces: [{
          traceId: "old",
          name: "POST /agents/assistant/text",
          entityType: "agent",
          entityId: "assistant",
          startTime: at(1),
          endTime: at(5),
          durationMs: 4000,
          status: "error",
          spanCount: 2
        }]
      })
    }))
})
