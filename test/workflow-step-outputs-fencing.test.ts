import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Schema } from "effect"
import { join } from "node:path"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { workflowEvent } from "../src/workflows/execution/ExecutionEndings.js"
import { makeInnerOutputs } from "../src/workflows/steps/InnerOutputs.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { withService } from "./support/serviceOnDatabase.js"
import { fetchJson, json, tempDir } from "./support/TestServer.js"

/**
 * Issue #31 (settled 4): an inner output is inserted only under the claim (running, at its version,
 * by its owner), in the transaction of its event; a stale claim writes nothing, and against a cancel
 * either the output and its event are stored before the cancel or neither is.
 */

const held = workflow({
  id: "held",
  name: "held",
  purpose: "runs until cancelled",
  input: Schema.Unknown,
  result: Schema.Unknown
})
  .andThen({ id: "wait", execute: () => Effect.never })

const TRIALS = 100

const rowOf = (sql: SqlClient.SqlClient, id: string) =>
  Effect.flatMap(
    sql<
      { version: number; owner: string | null; status: string }
    >`SELECT version, owner, status FROM workflow_executions WHERE id = ${id}`,
    (rows) => Effect.succeed(rows[0])
  ).pipe(Effect.orDie)

const waitRunning = (sql: SqlClient.SqlClient, id: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline) {
      const row = yield* rowOf(sql, id)
      if (row?.owner != null) return row
      yield* Effect.sleep("20 millis")
    }
    throw new Error(`${id} never ran`)
  })

const innerEvent = (id: string, path: string) =>
  workflowEvent({ id }, "step-complete", "one", "success", { stepIndex: 0, stepType: "andForEach", output: 1, path })

const fencing = (databaseUrl: Effect.Effect<string, never, any>) => {
  it.scopedLive(
    "a stale claim (older version, another owner) inserts nothing and appends no event; the holder's claim does",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [held], (base, sql) =>
          Effect.scoped(Effect.gen(function*() {
            const outputs = yield* Effect.provideService(makeInnerOutputs, SqlClient.SqlClient, sql)
            expect(
              (yield* fetchJson(`${base}/workflows/held/run`, json({ input: {}, options: { executionId: "f1" } })))
                .status
            ).toBe(201)
            const row = yield* waitRunning(sql, "f1")
            const entry = (path: string) => [{ path, value: { n: path } }]
            const stale = yield* outputs.commit(
              { id: "f1", version: row.version - 1, owner: row.owner! },
              entry("x[0]"),
              [innerEvent("f1", "x[0]")]
            )
            const other = yield* outputs.commit(
              { id: "f1", version: row.version, owner: "someone-else" },
              entry("x[1]"),
              [innerEvent("f1", "x[1]")]
            )
            expect(Option.isNone(stale) && Option.isNone(other)).toBe(true)
            const holder = yield* outputs.commit({ id: "f1", version: row.version, owner: row.owner! }, entry("x[2]"), [
              innerEvent("f1", "x[2]")
            ])
            expect(Option.isSome(holder)).toBe(true)
            const rows = yield* sql<{ path: string }>`SELECT path FROM workflow_step_outputs WHERE execution_id = 'f1'`
              .pipe(Effect.orDie)
            expect(rows.map((r) => r.path)).toEqual(["x[2]"])
            expect(yield* outputs.read("f1", "x")).toEqual(new Map([["x[2]", { n: "x[2]" }]]))
            const events = yield* sql<
              { event: string }
            >`SELECT event FROM workflow_events WHERE execution_id = 'f1' ORDER BY seq`.pipe(Effect.orDie)
            expect(events.map((e) => JSON.parse(e.event).path).filter(Boolean)).toEqual(["x[2]"])
          })))
      }),
    60_000
  )

  it.scopedLive(
    `${TRIALS} trials of an inner commit against a cancel: the output and its event are stored before the cancel, or neither`,
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [held], (base, sql) =>
          Effect.scoped(Effect.gen(function*() {
            const outputs = yield* Effect.provideService(makeInnerOutputs, SqlClient.SqlClient, sql)
            const outcomes = { committed: 0, refused: 0 }
            for (let trial = 0; trial < TRIALS; trial++) {
              const id = `r${trial}`
              yield* fetchJson(`${base}/workflows/held/run`, json({ input: {}, options: { executionId: id } }))
              const row = yield* waitRunning(sql, id)
              const [done] = yield* Effect.all([
                outputs.commit({ id, version: row.version, owner: row.owner! }, [{ path: "x[0]", value: trial }], [
                  innerEvent(id, "x[0]")
                ]),
                fetchJson(`${base}/workflows/held/executions/${id}/cancel`, { method: "POST" })
              ], { concurrency: 2 })
              const stored = yield* sql<
                { path: string }
              >`SELECT path FROM workflow_step_outputs WHERE execution_id = ${id}`.pipe(Effect.orDie)
              const events = (yield* sql<
                { event: string }
              >`SELECT event FROM workflow_events WHERE execution_id = ${id} ORDER BY seq`.pipe(Effect.orDie))
                .map((e) => JSON.parse(e.event))
              const inner = events.findIndex((e) => e.path === "x[0]")
              const cancelled = events.findIndex((e) => e.type === "workflow-cancelled")
              expect(cancelled).toBe(events.length - 1)
              expect(stored.length).toBe(Option.isSome(done) ? 1 : 0)
              expect(inner >= 0).toBe(Option.isSome(done))
              if (inner >= 0) expect(inner).toBeLessThan(cancelled)
              outcomes[Option.isSome(done) ? "committed" : "refused"]++
            }
            expect(outcomes.committed + outcomes.refused).toBe(TRIALS)
          })))
      }),
    300_000
  )
}

describe("inner outputs are fenced by the claim (SQLite)", () => {
  fencing(Effect.map(tempDir, (dir) => `file:${join(dir, "service.db")}`))
})

describe.skipIf(!postgresAvailable)("inner outputs are fenced by the claim (Postgres)", () => {
  fencing(freshPostgresDatabase)
})
