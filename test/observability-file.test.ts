import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import { observabilityFile, ObservabilitySql, ObservabilitySqlLive } from "../src/observability/ObservabilitySql.js"
import { tempDir } from "./support/TestServer.js"

/**
 * On a SQLite file the observability rows live in a file of their own (src/observability/ObservabilitySql.ts),
 * so the span writer never holds the lock the stores' commits wait on; rows written before it existed
 * move to it once.
 */

const observabilityTables = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<
      { name: string }
    >`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'observability_%' AND name <> 'observability_migrations' ORDER BY name`,
    (rows) => rows.map((row) => row.name)
  )

describe("the observability file", () => {
  it("sits beside the database file", () => {
    expect(observabilityFile("./.data/service.db")).toBe(join(".data", "service.observability.db"))
    expect(observabilityFile("/var/lib/agents/store")).toBe("/var/lib/agents/store.observability")
  })

  it.scopedLive("takes the rows the service's database held, once, and the service's database keeps no observability table", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const url = `file:${join(dir, "service.db")}`
      // A database of an earlier version: its migrations made the observability tables, with rows in them.
      yield* Effect.scoped(Effect.gen(function*() {
        const sql = Context.get(yield* Layer.build(DatabaseLive(url)), SqlClient.SqlClient)
        yield* sql`INSERT INTO observability_spans (span_id, trace_id, name, kind, start_time, end_time, duration_ms, status_code, attributes, events)
          VALUES ('s1', 't1', 'old span', 'internal', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.001Z', 1, 'ok', '{}', '[]')`
        yield* sql`INSERT INTO observability_logs (instance, logged_at, level, level_rank, message, attributes)
          VALUES ('i', '2026-01-01T00:00:00.000Z', 'INFO', 2, 'old line', '{}')`
      }))
      expect(existsSync(join(dir, "service.observability.db"))).toBe(false)

      const open = Effect.gen(function*() {
        const context = yield* Layer.build(ObservabilitySqlLive(url).pipe(Layer.provideMerge(DatabaseLive(url))))
        return {
          service: Context.get(context, SqlClient.SqlClient),
          observability: Context.get(context, ObservabilitySql)
        }
      })
      for (const start of [1, 2]) {
        yield* Effect.scoped(Effect.gen(function*() {
          const { observability, service } = yield* open
          expect(yield* observability<{ name: string }>`SELECT name FROM observability_spans`, `start ${start}`)
            .toEqual([{ name: "old span" }])
          expect(yield* observability<{ message: string }>`SELECT message FROM observability_logs`).toEqual([{
            message: "old line"
          }])
          expect(yield* observabilityTables(service)).toEqual([])
          expect(yield* observabilityTables(observability)).toEqual([
            "observability_logs",
            "observability_spans",
            "observability_trace_entities",
            "observability_traces"
          ])
        }))
      }
      expect(existsSync(join(dir, "service.observability.db"))).toBe(true)
    }))

  it.scopedLive("in memory there is one database: the observability client is the service's", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(
        ObservabilitySqlLive("file::memory:").pipe(Layer.provideMerge(DatabaseLive("file::memory:")))
      )
      expect(Context.get(context, ObservabilitySql)).toBe(Context.get(context, SqlClient.SqlClient))
    }))
})
