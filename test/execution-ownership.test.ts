import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Option } from "effect"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import { ExecutionStore } from "../src/workflows/execution/ExecutionStore.js"
import { ExecutionStoreLive } from "../src/workflows/execution/ExecutionStoreLive.js"
import { testEvent, testExecution } from "./support/executions.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

/**
 * Ownership in the store: a claim moves the epoch, so the previous owner's writes are refused, and
 * concurrent claimers take each orphan exactly once (on SQLite and Postgres).
 */

const backends = [
  { name: "SQLite", skip: false, url: Effect.map(tempDir, (dir) => `file:${join(dir, "owners.db")}`) },
  { name: "Postgres", skip: !postgresAvailable, url: freshPostgresDatabase }
] as const

const event = testEvent
const execution = (id: string, owner: string) => testExecution(id, { owner })

const storeOn = (url: string) =>
  Effect.map(Layer.build(ExecutionStoreLive.pipe(Layer.provideMerge(DatabaseLive(url)))), (context) => ({
    store: Context.get(context, ExecutionStore),
    sql: Context.get(context, SqlClient.SqlClient)
  }))

for (const backend of backends) {
  describe.skipIf(backend.skip)(`execution ownership on ${backend.name}`, () => {
    it.scoped(
      "a claim moves the epoch: every write of the previous owner is refused, the new owner's apply",
      () =>
        Effect.gen(function*() {
          const { sql, store } = yield* storeOn(yield* backend.url)
          yield* store.create(execution("x", "a"), [event("x", "workflow-start"), event("x", "step-start")])
          // "a" is not live (only "b" is): its execution is an orphan, and "b" takes it.
          const taken = yield* store.claimOrphans("b", { limit: 10, liveOwners: sql`SELECT 'b'` })
          expect(taken.map((e) => [e.id, e.owner, e.version])).toEqual([["x", "b", 1]])

          const old = { id: "x", version: 0, owner: "a" }
          const checkpoint = { stepIndex: 1, currentData: { by: "a" }, stepData: { s: "a" } }
          expect(Option.isNone(yield* store.append(old, [event("x", "step-start")]))).toBe(true)
          expect(Option.isNone(yield* store.advance(old, checkpoint, [event("x", "step-complete")]))).toBe(true)
          expect(
            Option.isNone(yield* store.finish(old, { status: "error", error: "late" }, event("x", "workflow-error")))
          ).toBe(true)
          expect(
            Option.isNone(
              yield* store.suspend(
                { ...old, atStep: 0 },
                { suspendedAt: "t", reason: "r", stepIndex: 0, stepId: "s" },
                event("x", "workflow-suspended")
              )
            )
          ).toBe(true)
          expect(yield* store.release(old)).toBe(false)
          // The same epoch under another owner's name is refused too.
          expect(Option.isNone(yield* store.append({ id: "x", version: 1, owner: "a" }, [event("x", "step-start")])))
            .toBe(true)

          const held = { id: "x", version: 1, owner: "b" }
          expect(
            Option.getOrNull(
              yield* store.advance(held, { ...checkpoint, currentData: { by: "b" } }, [event("x", "step-complete")])
            )
          ).toBe(3)
          const row = Option.getOrThrow(yield* store.get("x"))
          expect(row).toMatchObject({ status: "running", owner: "b", version: 1, currentData: { by: "b" }, lastSeq: 3 })

          // Released, it is an orphan again: the next claimer gets the next epoch.
          expect(yield* store.release(held)).toBe(true)
          const again = yield* store.claimOrphans("c", { limit: 10, liveOwners: sql`SELECT 'b' UNION SELECT 'c'` })
          expect(again.map((e) => [e.owner, e.version])).toEqual([["c", 3]])
          // A live owner's executions are never taken.
          expect(yield* store.claimOrphans("d", { limit: 10, liveOwners: sql`SELECT 'c'` })).toEqual([])
        }),
      60_000
    )

    it.scoped(
      "concurrent claimers take each orphan exactly once (30 trials of 20 orphans and 5 claimers)",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const { sql, store } = yield* storeOn(url)
          const claimers = ["c0", "c1", "c2", "c3", "c4"]
          // Each claimer its own store and connections, as separate instances have (one store would
          // serialise them through its group commit).
          const stores = yield* Effect.forEach(claimers, () => Effect.map(storeOn(url), (own) => own.store))
          // Every claimer is live, and sees the others live: only the dead instance's executions are orphans.
          const live = sql.unsafe(claimers.map((claimer) => `SELECT '${claimer}'`).join(" UNION ALL "))
          for (let trial = 0; trial < 30; trial++) {
            const ids = Array.from({ length: 20 }, (_, i) => `t${trial}-${i}`)
            yield* Effect.forEach(ids, (id) => store.create(execution(id, "dead"), [event(id, "workflow-start")]), {
              concurrency: "unbounded"
            })
            const taken = yield* Effect.forEach(
              claimers,
              (claimer, i) => stores[i].claimOrphans(claimer, { limit: 7, liveOwners: live }),
              {
                concurrency: "unbounded"
              }
            )
            const claimed = taken.flat()
            expect(claimed.map((e) => e.id).sort()).toEqual([...new Set(claimed.map((e) => e.id))].sort())
            // A last pass takes what the five left (they may skip rows another holds); nothing is taken twice.
            const rest = yield* store.claimOrphans("c0", { limit: 100, liveOwners: live })
            expect(claimed.length + rest.length).toBe(20)
            for (const id of ids) {
              const row = Option.getOrThrow(yield* store.get(id))
              const winner = [...claimed, ...rest].find((e) => e.id === id)!
              expect([row.owner, row.version]).toEqual([winner.owner, 1])
            }
            yield* Effect.forEach(ids, (id) => store.cancel(id, event(id, "workflow-cancelled")), { discard: true })
          }
        }),
      120_000
    )
  })
}
