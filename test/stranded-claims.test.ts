import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { activity, eventually, post, release, resetActivity, rowsOf, startInstance } from "./support/concurrency.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson } from "./support/TestServer.js"

/**
 * A claim whose COMMIT went through while its answer was lost (a connection reset during the reply)
 * leaves a row the store says an instance runs, with no fiber there. On a shared store the instance's
 * poll finds such rows once unwritten for four leases, releases them and takes them over. Here the row
 * is made by hand: a queued execution rewritten to what a lost admission leaves.
 */
describe.skipIf(!postgresAvailable)("a claim whose answer was lost (Postgres)", () => {
  it.scopedLive(
    "a row held by a live instance with no fiber there is released and taken over: it completes",
    () =>
      Effect.gen(function*() {
        const url = yield* freshPostgresDatabase
        // A 1 s lease: stranded after 10 s (the floor).
        const a = yield* startInstance(url, "strand-a", { leaseMs: 1_000 })
        resetActivity("single")
        const latch = "stranded"
        yield* post(`${a.url}/workflows/single/run`, {
          input: { group: "strand", latch },
          options: { executionId: "strand-hold" }
        })
        const queued = yield* post(`${a.url}/workflows/single/run`, {
          input: { group: "strand", ms: 5 },
          options: { executionId: "strand-lost" }
        })
        expect(queued.body.data.waiting).toBe("concurrency")
        yield* a
          .sql`UPDATE workflow_executions SET status = 'running', queued_at = NULL, owner = 'strand-a', version = version + 1,
        updated_at = '2000-01-01T00:00:00.000Z' WHERE id = 'strand-lost'`.pipe(Effect.orDie)
        yield* release(latch)
        const statusOf = (id: string) =>
          Effect.map(
            fetchJson(`${a.url}/workflows/single/executions/${id}/state`),
            (r) => r.body.data?.status as string
          )
        yield* eventually(statusOf("strand-hold"), (status) => status === "completed", "the holder completed")
        yield* eventually(
          statusOf("strand-lost"),
          (status) => status === "completed",
          "the stranded one taken over and completed",
          60_000
        )
        expect(activity.get("single")!.starts).toEqual(["strand-hold", "strand-lost"])
        expect((yield* rowsOf(a.sql, "single")).map((row) => row.status)).toEqual(["completed", "completed"])
        yield* a.stop
      }),
    120_000
  )
})
