import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { join } from "node:path"
import { defineApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Issue #42 item 8 (settled 7): a loop's stored size escaped the 32 MiB history bound (one 1 KB request
 * stored 327 MB with `maxIterations: 100000`). An execution's stored bytes (events, step outputs, value
 * rows, a shared value once) count against `workflows.maxExecutionBytes`; crossing it fails the
 * execution at that step, and the count survives a restart.
 */

const BOUND = 256 * 1024

/** ~1 KB per iteration, each distinct (so each is a value row of its own); stops by itself only after 2,000. */
/** Its input: the iteration at which it suspends once (a number as text; -1: never). */
const chatty = workflow({
  id: "chatty",
  name: "chatty",
  purpose: "a loop that writes ~1 KB per iteration",
  input: Schema.String,
  result: Schema.Unknown
})
  .andDoWhile({
    id: "grow",
    maxIterations: 100_000,
    step: {
      id: "write",
      execute: ({ input, iteration, resumeData, suspend }) =>
        iteration === Number(input) && resumeData === undefined ? suspend("pause") : `${iteration}:${"x".repeat(1024)}`
    },
    condition: ({ iteration }) => iteration < 1_999
  })

let instances = 0
const serve = <A, E>(databaseUrl: string, use: (url: string, sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const defaults = resolveServerConfig({}, {})
    const server = TestServerLive({
      app: defineApp({ workflows: [chatty] }),
      config: {
        databaseUrl: Redacted.make(databaseUrl),
        instanceId: `execution-bytes-${++instances}`,
        workflows: { ...defaults.workflows, drainMs: 50, maxExecutionBytes: BOUND }
      }
    })
    const { services, url } = Context.get(yield* Layer.build(server), TestServer)
    return yield* use(url, Context.get(services, SqlClient.SqlClient))
  }))

/** What the execution occupies in the store: its events, inner step outputs and value rows (ASCII: characters are bytes). */
const storedBytes = (sql: SqlClient.SqlClient, id: string) =>
  Effect.map(
    sql<{ bytes: number | string }>`SELECT
      (SELECT COALESCE(SUM(length(event)), 0) FROM workflow_events WHERE execution_id = ${id}) +
      (SELECT COALESCE(SUM(length(output)), 0) FROM workflow_step_outputs WHERE execution_id = ${id}) +
      (SELECT COALESCE(SUM(length(value)), 0) FROM workflow_values WHERE execution_id = ${id}) AS bytes`,
    (rows) => Number(rows[0].bytes)
  ).pipe(Effect.orDie)

const bounds = (databaseUrl: Effect.Effect<string, never, any>, store: string) => {
  it.scopedLive(
    "a loop writing ~1 KB per iteration fails at the step that crosses workflows.maxExecutionBytes, stored bytes near the bound",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        const id = `grow-${store}`
        yield* serve(url, (base, sql) =>
          Effect.gen(function*() {
            const started = Date.now()
            const response = yield* fetchJson(
              `${base}/workflows/chatty/execute`,
              json({ input: "-1", options: { executionId: id } })
            )
            const stored = yield* storedBytes(sql, id)
            console.log(
              `[${store}] loop: ${stored} bytes stored (bound ${BOUND}) in ${
                Date.now() - started
              } ms, answer ${response.status}`
            )
            expect(response.status).toBe(500)
            expect(response.body.error).toMatch(
              /^Failed to execute workflow: step grow: .*workflows\.maxExecutionBytes/
            )
            expect(stored).toBeGreaterThan(BOUND * 0.8)
            expect(stored).toBeLessThan(BOUND * 1.1)
            // The row's count is what the store holds, a part shared by an event and an output row once.
            const [row] = yield* Effect.orDie(
              sql<{ stored_bytes: number | string }>`SELECT stored_bytes FROM workflow_executions WHERE id = ${id}`
            )
            expect(Number(row.stored_bytes)).toBe(stored)
          }))
      }),
    120_000
  )

  it.scopedLive(
    "the count survives a restart: a loop suspended near the bound and resumed by a fresh instance fails once the total crosses it",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        const id = `resumed-${store}`
        yield* serve(url, (base) =>
          Effect.gen(function*() {
            const suspended = yield* fetchJson(
              `${base}/workflows/chatty/execute`,
              json({ input: "80", options: { executionId: id } })
            )
            expect(suspended.body.data).toMatchObject({ status: "suspended" })
          }))
        yield* serve(url, (base, sql) =>
          Effect.gen(function*() {
            const before = yield* storedBytes(sql, id)
            const resumed = yield* fetchJson(
              `${base}/workflows/chatty/executions/${id}/resume`,
              json({ resumeData: {} })
            )
            const stored = yield* storedBytes(sql, id)
            console.log(`[${store}] resumed loop: ${before} bytes before the restart, ${stored} after (bound ${BOUND})`)
            expect(before).toBeGreaterThan(BOUND / 2)
            expect(resumed.body.error).toMatch(/workflows\.maxExecutionBytes/)
            expect(stored).toBeLessThan(BOUND * 1.1)
          }))
      }),
    120_000
  )
}

describe("workflows.maxExecutionBytes (SQLite)", () => {
  bounds(Effect.map(tempDir, (dir) => `file:${join(dir, "service.db")}`), "sqlite")
})

describe.skipIf(!postgresAvailable)("workflows.maxExecutionBytes (Postgres)", () => {
  bounds(freshPostgresDatabase, "pg")
})
