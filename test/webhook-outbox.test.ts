import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import { makeWebhookStore } from "../src/webhooks/WebhookStore.js"
import { ExecutionStore } from "../src/workflows/execution/ExecutionStore.js"
import { ExecutionStoreLive } from "../src/workflows/execution/ExecutionStoreLive.js"
import { testEvent, testExecution } from "./support/executions.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

/**
 * The outbox of completion callbacks (issue #33, settled 9) raced by two instances on SQLite and
 * Postgres: a due delivery is claimed by exactly one claimer per attempt, and an execution's ending
 * raced by a cancel queues exactly one delivery, the one of the write that won.
 */

const backends = [
  { name: "SQLite", skip: false, url: Effect.map(tempDir, (dir) => `file:${join(dir, "webhooks.db")}`) },
  { name: "Postgres", skip: !postgresAvailable, url: freshPostgresDatabase }
] as const

/** One instance: its own client (and connections) on the database. */
const instanceOn = (url: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(ExecutionStoreLive.pipe(Layer.provideMerge(DatabaseLive(url))))
    const sql = Context.get(context, SqlClient.SqlClient)
    const webhooks = yield* Effect.provideService(makeWebhookStore, SqlClient.SqlClient, sql)
    return { sql, executions: Context.get(context, ExecutionStore), webhooks }
  })

const TRIALS = 200

for (const backend of backends) {
  describe.skipIf(backend.skip)(`webhook outbox on ${backend.name}`, () => {
    it.scoped(
      `two instances claim the same due delivery: exactly one takes each attempt (${TRIALS} trials)`,
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const a = yield* instanceOn(url)
          const b = yield* instanceOn(url)
          const past = new Date(Date.now() - 1000).toISOString()
          for (let trial = 0; trial < TRIALS; trial++) {
            const id = `whd_${trial}`
            yield* Effect.orDie(
              a.sql`INSERT INTO webhook_deliveries (id, execution_id, workflow_id, owner, url, event, payload, truncated, status,
            attempts, next_attempt_at, created_at, updated_at)
            VALUES (${id}, ${`e${trial}`}, 'w', '', 'https://127.0.0.1/', 'execution.completed', '{}', 0, 'pending', 0, ${past}, ${past}, ${past})`
            )
            const [x, y] = yield* Effect.all([a.webhooks.claimDue(10, 60_000), b.webhooks.claimDue(10, 60_000)], {
              concurrency: 2
            })
            const taken = [...x, ...y]
            expect(taken.map((d) => d.id)).toEqual([id])
            expect(taken[0].attempts).toBe(1)
            // Taken, it is not due again until its lease passes; recorded, a stale attempt is refused.
            expect(yield* a.webhooks.claimDue(10, 60_000)).toEqual([])
            expect(yield* b.webhooks.record({ ...taken[0], attempts: 0 }, { status: "delivered", code: 200 })).toBe(
              false
            )
            expect(yield* a.webhooks.record(taken[0], { status: "delivered", code: 200 })).toBe(true)
          }
        }),
      120_000
    )

    it.scoped(
      `an ending raced by a cancel queues exactly one delivery, the winner's (${TRIALS} trials)`,
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const a = yield* instanceOn(url)
          const b = yield* instanceOn(url)
          const seen = new Set<string>()
          for (let trial = 0; trial < TRIALS; trial++) {
            const id = `race-${trial}`
            const created = yield* a.executions.create(
              testExecution(id, { owner: "a", webhookUrl: "https://127.0.0.1/hook" }),
              [testEvent(id, "workflow-start")]
            )
            expect(Option.isSome(created)).toBe(true)
            const complete = { ...testEvent(id, "workflow-complete"), output: { n: trial } }
            const cancelled = { ...testEvent(id, "workflow-cancelled"), reason: "raced" }
            const [finished, cancel] = yield* Effect.all([
              a.executions.finish(
                { id, version: 0, owner: "a" },
                { status: "completed", output: { n: trial } },
                complete
              ),
              b.executions.cancel(id, cancelled)
            ], { concurrency: 2 })
            expect([finished, cancel].filter(Option.isSome)).toHaveLength(1)
            const rows = yield* Effect.orDie(
              a.sql<
                { event: string; status: string }
              >`SELECT event, status FROM webhook_deliveries WHERE execution_id = ${id}`
            )
            expect(rows).toHaveLength(1)
            expect(rows[0].event).toBe(Option.isSome(finished) ? "execution.completed" : "execution.cancelled")
            seen.add(rows[0].event)
          }
          yield* Effect.logInfo(`winners seen: ${[...seen].join(", ")}`)
          // An execution without a callback queues nothing.
          const plain = "plain"
          yield* a.executions.create(testExecution(plain, { owner: "a" }), [testEvent(plain, "workflow-start")])
          yield* a.executions.finish(
            { id: plain, version: 0, owner: "a" },
            { status: "completed", output: 1 },
            testEvent(plain, "workflow-complete")
          )
          expect(yield* Effect.orDie(a.sql`SELECT id FROM webhook_deliveries WHERE execution_id = ${plain}`)).toEqual(
            []
          )
        }),
      120_000
    )
  })
}
