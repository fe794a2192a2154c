import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Layer, Logger, Option, Redacted, Schema } from "effect"
import { join } from "node:path"
import { defineApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { DatabaseLive } from "../src/Database.js"
import { ServicesLive } from "../src/Service.js"
import { makeGroupCommit } from "../src/storage/GroupCommit.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { WorkflowEngine } from "../src/workflows/engine/WorkflowEngine.js"
import { ExecutionStore } from "../src/workflows/execution/ExecutionStore.js"
import { ExecutionStoreLive } from "../src/workflows/execution/ExecutionStoreLive.js"
import { testEvent, testExecution } from "./support/executions.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

/**
 * The group commit shares transactions between concurrent writers: a failing write must fail only
 * for its caller, conditional writes keep their meaning inside a batch, and a step's output is
 * committed before the next step runs (a crash between steps resumes from the last committed one).
 */

const sqliteUrl = Effect.map(tempDir, (dir) => `file:${join(dir, "group.db")}`)

const backends = [
  { name: "SQLite", skip: false, url: sqliteUrl },
  { name: "Postgres", skip: !postgresAvailable, url: freshPostgresDatabase }
] as const

const event = testEvent
const execution = (id: string) => testExecution(id)

/** Runs in step "a" once per execution; step "b" waits on `gate` (never completed in the first life). */
const ranA = new Map<string, number>()
const twoSteps = (gate: Effect.Effect<void>) =>
  workflow({ id: "two", name: "Two", purpose: "a, then b", input: Schema.Struct({}), result: Schema.Unknown })
    .andThen({
      id: "a",
      execute: ({ executionId }) => (ranA.set(executionId, (ranA.get(executionId) ?? 0) + 1), { a: true })
    })
    .andThen({ id: "b", execute: ({ data }) => Effect.as(gate, { ...data, b: true }) })

const services = (url: string, gate: Effect.Effect<void>) =>
  ServicesLive(defineApp({ workflows: [twoSteps(gate)] }), {
    ...resolveServerConfig({}, {}),
    port: 0,
    databaseUrl: Redacted.make(url)
  }).pipe(
    Layer.provide(Logger.remove(Logger.defaultLogger))
  )

/** A client on the backend's test database, with an empty `probe` table. */
const probeDatabase = (url: string) =>
  Effect.gen(function*() {
    const sql = Context.get(yield* Layer.build(DatabaseLive(url)), SqlClient.SqlClient)
    yield* sql`CREATE TABLE probe (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`.pipe(Effect.orDie)
    return sql
  })

for (const backend of backends) {
  describe.skipIf(backend.skip)(`group commit on ${backend.name}`, () => {
    it.scoped(
      "a write that fails in a shared transaction fails only for its caller; conditional writes keep their meaning",
      () =>
        Effect.gen(function*() {
          const sql = yield* probeDatabase(yield* backend.url)
          yield* sql`INSERT INTO probe ${sql.insert({ id: 0, note: "taken" })}`.pipe(Effect.orDie)
          const group = yield* makeGroupCommit(sql)

          // Submitted at the same moment, so they share transactions: inserts, one duplicate key (fails),
          // one conditional update that matches nothing (applies nowhere, fails nothing).
          const inserts = Array.from({ length: 20 }, (_, i) =>
            group.submit(sql`INSERT INTO probe ${sql.insert({ id: i + 1, note: "new" })}`))
          const duplicate = group.submit(sql`INSERT INTO probe ${sql.insert({ id: 0, note: "again" })}`)
          const noMatch = group.submit(sql<{ id: number }>`UPDATE probe SET note = 'x' WHERE id = 999 RETURNING id`)
          const exits = yield* Effect.all([...inserts.map(Effect.exit), Effect.exit(duplicate), Effect.exit(noMatch)], {
            concurrency: "unbounded"
          })

          expect(exits.slice(0, 20).every(Exit.isSuccess)).toBe(true)
          expect(Exit.isFailure(exits[20])).toBe(true)
          expect(exits[21]).toEqual(Exit.succeed([]))
          const rows = yield* sql<{ id: number; note: string }>`SELECT id, note FROM probe ORDER BY id`.pipe(
            Effect.orDie
          )
          expect(rows.map((row) => [Number(row.id), row.note])).toEqual([
            [0, "taken"],
            ...Array.from({ length: 20 }, (_, i) => [i + 1, "new"])
          ])
        }),
      60_000
    )

    it.scoped(
      "rows staged by the writes of a transaction are written with it; a write whose rows fail fails alone",
      () =>
        Effect.gen(function*() {
          const sql = yield* probeDatabase(yield* backend.url)
          yield* sql`CREATE TABLE staged (id INTEGER PRIMARY KEY, probe INTEGER NOT NULL)`.pipe(Effect.orDie)
          yield* sql`INSERT INTO staged ${sql.insert({ id: 0, probe: 0 })}`.pipe(Effect.orDie)
          const flushes: Array<number> = []
          const group = yield* makeGroupCommit<{ readonly id: number; readonly probe: number }>(sql, (rows) =>
            Effect.zipRight(
              Effect.sync(() =>
                flushes.push(rows.length)
              ),
              sql`INSERT INTO staged ${sql.insert(rows)}`
            ))

          // Each write inserts its probe row and stages one row; write 7 stages a taken id.
          const writes = Array.from({ length: 10 }, (_, i) =>
            group.submit(Effect.tap(sql`INSERT INTO probe ${sql.insert({ id: i + 1, note: "new" })}`, () =>
              Effect.sync(() =>
                group.stage([{ id: i === 7 ? 0 : 100 + i, probe: i + 1 }])
              ))))
          const exits = yield* Effect.all(writes.map(Effect.exit), { concurrency: "unbounded" })

          expect(exits.map(Exit.isSuccess)).toEqual(Array.from({ length: 10 }, (_, i) =>
            i !== 7))
          // Shared first (one statement for the batch's rows), then one by one after the failure.
          expect(flushes[0]).toBe(10)
          const probes = yield* sql<{ id: number }>`SELECT id FROM probe ORDER BY id`.pipe(Effect.orDie)
          const staged = yield* sql<{ id: number; probe: number }>`SELECT id, probe FROM staged ORDER BY id`.pipe(
            Effect.orDie
          )
          const kept = Array.from({ length: 10 }, (_, i) =>
            i).filter((i) =>
              i !== 7
            )
          expect(probes.map((row) => Number(row.id))).toEqual(kept.map((i) => i + 1))
          expect(staged.map((row) => [Number(row.id), Number(row.probe)])).toEqual([
            [0, 0],
            ...kept.map((i) => [100 + i, i + 1])
          ])
        }),
      60_000
    )

    it.scoped(
      "concurrent executions interleave: numbers 1..n each, a stale claim is refused alone, a cancel in the same batch wins",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const context = yield* Layer.build(ExecutionStoreLive.pipe(Layer.provideMerge(DatabaseLive(url))))
          const store = Context.get(context, ExecutionStore)
          const ids = Array.from({ length: 30 }, (_, i) => `x-${i}`)
          const created = yield* Effect.forEach(ids, (id) =>
            store.create(execution(id), [event(id, "workflow-start"), event(id, "step-start")]), {
            concurrency: "unbounded"
          })
          expect(created.every((seq) =>
            Option.getOrNull(seq) === 2
          )).toBe(true)

          // Each execution advances 5 steps; every third is cancelled from outside meanwhile, and a stale
          // claim (an old version) is tried beside each advance.
          const outcomes = yield* Effect.forEach(ids, (id, i) =>
            Effect.gen(function*() {
              const claim = { id, version: 0 }
              const applied: Array<number> = []
              for (let step = 1; step <= 5; step++) {
                const checkpoint = { stepIndex: step, currentData: { step }, stepData: { [`s${step}`]: step } }
                const events = [event(id, "step-complete"), event(id, "step-start")]
                const [advanced, stale] = yield* Effect.all([
                  store.advance(claim, checkpoint, events),
                  store.advance({ id, version: 7 }, checkpoint, events),
                  ...(i % 3 === 0 && step === 3 ? [store.cancel(id, event(id, "workflow-cancelled"))] : [])
                ], { concurrency: "unbounded" })
                expect(Option.isNone(stale)).toBe(true)
                if (Option.isNone(advanced)) break
                applied.push(advanced.value)
              }
              return applied
            }), { concurrency: "unbounded" })

          const rows = yield* Effect.forEach(ids, (id) => Effect.all([store.get(id), store.events(id, 0)]))
          rows.forEach(([row, events], i) => {
            const stored = Option.getOrThrow(row)
            expect(events.map((e) => e.seq)).toEqual(events.map((_, n) => n + 1))
            expect(stored.lastSeq).toBe(events.length)
            if (i % 3 === 0) {
              expect(stored.status).toBe("cancelled")
              expect(events.at(-1)!.event.type).toBe("workflow-cancelled")
            } else {
              expect(outcomes[i]).toEqual([4, 6, 8, 10, 12])
              expect(stored).toMatchObject({ status: "running", stepIndex: 5, currentData: { step: 5 } })
            }
          })
        }),
      60_000
    )

    it.scopedLive(
      "a crash between steps: the next life resumes from the last committed step, which does not run again",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const executionId = `crash-${backend.name}`
          const reachedB = yield* Deferred.make<void>()
          // First life: "a" commits, then "b" never finishes; the life ends (its scope closes) mid-step.
          yield* Effect.scoped(Effect.gen(function*() {
            const context = yield* Layer.build(
              services(url, Effect.zipRight(Deferred.succeed(reachedB, undefined), Effect.never))
            )
            const engine = Context.get(context, WorkflowEngine)
            yield* engine.run("two", { input: {}, options: { executionId } })
            yield* Deferred.await(reachedB)
          }))
          expect(ranA.get(executionId)).toBe(1)

          // Second life on the same database: recovery continues at "b" from the stored checkpoint.
          const context = yield* Layer.build(services(url, Effect.void))
          const engine = Context.get(context, WorkflowEngine)
          const deadline = Date.now() + 30_000
          let state = yield* engine.state("two", executionId)
          while (state.status === "running" && Date.now() < deadline) {
            yield* Effect.sleep("20 millis")
            state = yield* engine.state("two", executionId)
          }
          expect(state).toMatchObject({ status: "completed", result: { a: true, b: true } })
          expect(ranA.get(executionId)).toBe(1)
          const [record] = yield* engine.executions({ workflowId: "two", limit: 10, offset: 0 })
          expect(record.events.map((e) => `${e.type}:${e.from}`)).toEqual([
            "workflow-start:Two",
            "step-start:a",
            "step-complete:a",
            "step-start:b",
            "step-start:b",
            "step-complete:b",
            "workflow-complete:Two"
          ])
          expect(record.events.map((e) => Number(e.id))).toEqual([1, 2, 3, 4, 5, 6, 7])
        }),
      60_000
    )
  })
}
