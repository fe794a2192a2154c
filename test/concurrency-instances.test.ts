import { describe, expect, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { join } from "node:path"
import { activity, eventually, post, release, resetActivity, rowsOf, startInstance } from "./support/concurrency.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson, tempDir } from "./support/TestServer.js"

/**
 * Workflow concurrency limits (issue #33, item 3) across instances and restarts: on SQLite one instance
 * stopped and started again on its file, on Postgres two instances of one database (in this process,
 * so the steps' shared record sees both). A limit of 2 under 20 concurrent starts spread over the
 * instances, FIFO admission with the slot holder's instance stopped in between, and races on the
 * slot claim (many trials): one admitted per free slot, and reject's 409 for all but one.
 */

const backends = [
  {
    name: "SQLite",
    skip: false,
    shared: false,
    url: Effect.map(tempDir, (dir) => `file:${join(dir, "concurrency.db")}`)
  },
  { name: "Postgres", skip: !postgresAvailable, shared: true, url: freshPostgresDatabase }
] as const

type Instance = Effect.Effect.Success<ReturnType<typeof startInstance>>

const statusesOf = (url: string, workflowId: string, ids: ReadonlyArray<string>) =>
  Effect.forEach(
    ids,
    (id) =>
      Effect.map(
        fetchJson(`${url}/workflows/${workflowId}/executions/${id}/state`),
        (r) => r.body.data?.status as string
      )
  )

const allCompleted = (url: string, workflowId: string, ids: ReadonlyArray<string>) =>
  eventually(
    statusesOf(url, workflowId, ids),
    (all) => all.every((s) => s === "completed"),
    `${workflowId}: all completed`,
    60_000
  )

for (const backend of backends) {
  describe.skipIf(backend.skip)(`workflow concurrency limits across instances (${backend.name})`, () => {
    /** Two instances on Postgres; on SQLite the one instance twice (a SQLite file has one). */
    const instances = (url: string) =>
      Effect.gen(function*() {
        const a = yield* startInstance(url, "conc-a")
        const b: Instance = backend.shared ? yield* startInstance(url, "conc-b") : a
        return [a, b] as const
      })

    it.scopedLive(
      "a limit of 2 under 20 concurrent starts over the instances: never more than 2 at once, all complete",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* instances(yield* backend.url)
          resetActivity("pair")
          const answers = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) =>
              post(`${(i % 2 === 0 ? a : b).url}/workflows/pair/execute`, {
                input: { ms: 80 },
                options: { executionId: `pair-${i}` }
              })),
            { concurrency: "unbounded" }
          )
          expect(answers.map((answer) => answer.body.data?.status)).toEqual(answers.map(() => "completed"))
          const seen = activity.get("pair")!
          expect(seen.starts).toHaveLength(20)
          expect(seen.max).toBe(2)
          yield* a.stop
          if (b !== a) yield* b.stop
        }),
      120_000
    )

    it.scopedLive(
      "queued executions wait through the stop of the instance holding the slot, then start in FIFO order",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          let [a, b] = yield* instances(url)
          resetActivity("single")
          const holder = yield* post(`${a.url}/workflows/single/run`, {
            input: { group: "g", latch: `${backend.name}-hold` },
            options: { executionId: "hold" }
          })
          expect(holder.body.data.waiting).toBeUndefined()
          const queued = Array.from({ length: 6 }, (_, i) => `q-${i}`)
          for (const [i, id] of queued.entries()) {
            const answer = yield* post(`${(i % 2 === 0 ? a : b).url}/workflows/single/run`, {
              input: { group: "g", ms: 20 },
              options: { executionId: id }
            })
            expect(answer.body.data.waiting).toBe("concurrency")
          }
          yield* eventually(
            Effect.sync(() => activity.get("single")!.starts),
            (starts) => starts.includes("hold"),
            "the holder executing"
          )
          // The holder's instance goes away (its step interrupted after the drain); the other goes on with it,
          // or (SQLite) the instance comes back.
          yield* a.stop
          if (!backend.shared) [a, b] = yield* instances(url)
          const survivor = backend.shared ? b : a
          const rows = yield* rowsOf(survivor.sql, "single")
          expect(rows.filter((row) => row.status === "queued").map((row) => row.id)).toEqual(queued)
          yield* eventually(
            Effect.sync(() => activity.get("single")!.starts.filter((id) => id === "hold").length),
            (n) => n === 2,
            "the holder executing again after the stop"
          )
          yield* release(`${backend.name}-hold`)
          yield* allCompleted(survivor.url, "single", ["hold", ...queued])
          expect(activity.get("single")!.starts).toEqual(["hold", "hold", ...queued])
          expect(activity.get("single")!.max).toBe(1)
          yield* survivor.stop
        }),
      120_000
    )

    it.scopedLive.skipIf(!backend.shared)(
      "an instance that dies holding a slot: its running row keeps the slot until another instance takes it over and ends it, then the queue moves",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* instances(yield* backend.url)
          resetActivity("single")
          const latch = `${backend.name}-ghost`
          yield* post(`${a.url}/workflows/single/run`, {
            input: { group: "ghost", latch },
            options: { executionId: "ghost-hold" }
          })
          const queued = ["ghost-0", "ghost-1", "ghost-2"]
          for (const id of queued) {
            const answer = yield* post(`${b.url}/workflows/single/run`, {
              input: { group: "ghost", ms: 5 },
              options: { executionId: id }
            })
            expect(answer.body.data.waiting).toBe("concurrency")
          }
          yield* eventually(Effect.sync(() => activity.get("single")!.starts), (starts) =>
            starts.includes("ghost-hold"), "the holder executing")
          // As if its instance died: the row is owned by an instance that is not live (no lock, no lease).
          yield* a
            .sql`UPDATE workflow_executions SET owner = 'dead-instance', version = version + 1 WHERE id = 'ghost-hold'`
            .pipe(Effect.orDie)
          // A live instance takes it over and runs its step again; meanwhile nothing else of the key runs.
          yield* eventually(
            Effect.sync(() =>
              activity.get("single")!.starts.filter((id) =>
                id === "ghost-hold"
              ).length
            ),
            (n) => n === 2,
            "the holder taken over",
            60_000
          )
          const rows = yield* rowsOf(a.sql, "single")
          expect(rows.filter((row) => row.id.startsWith("ghost-") && row.status === "queued").map((row) => row.id))
            .toEqual(queued)
          yield* release(latch)
          yield* allCompleted(a.url, "single", ["ghost-hold", ...queued])
          // (The "dead" instance is alive here: its fiber ran the step too until its poll stopped it, the
          // takeover's at-least-once; none of the queued ones started before the holder ended.)
          expect(activity.get("single")!.starts).toEqual(["ghost-hold", "ghost-hold", ...queued])
          yield* a.stop
          yield* b.stop
        }),
      120_000
    )

    it.scopedLive(
      "a crash that left a key over its limit (a woken or resumed execution claimed, not yet queued again): what takes the executions over runs at most the limit",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          let [a, b] = yield* instances(url)
          resetActivity("single")
          const latch = `${backend.name}-over`
          yield* post(`${a.url}/workflows/single/run`, {
            input: { group: "over", latch },
            options: { executionId: "over-hold" }
          })
          const queued = yield* post(`${b.url}/workflows/single/run`, {
            input: { group: "over", latch },
            options: { executionId: "over-next" }
          })
          expect(queued.body.data.waiting).toBe("concurrency")
          yield* eventually(Effect.sync(() => activity.get("single")!.starts), (starts) =>
            starts.includes("over-hold"), "the holder executing")
          // What a process killed between a wake's (or a resume's) claim and its queueing again leaves: a
          // second running row of the key, owned by an instance that is gone.
          yield* a
            .sql`UPDATE workflow_executions SET status = 'running', queued_at = NULL, owner = 'dead-instance', version = version + 1
          WHERE id = 'over-next'`.pipe(Effect.orDie)
          if (!backend.shared) {
            yield* a.stop
            ;[a, b] = yield* instances(url)
          }
          const taken = ["over-next", "over-hold"]
          // Taken over (on SQLite both at the restart): one of them runs, the other queues behind it.
          const statuses = Effect.map(rowsOf(a.sql, "single"), (rows) =>
            rows.filter((row) =>
              taken.includes(row.id)
            ).map((row) =>
              row.status
            ).sort().join())
          yield* eventually(
            statuses,
            (now) => now === "queued,running" || activity.get("single")!.max > 1,
            "one running, one queued",
            60_000
          )
          expect(activity.get("single")!.max).toBe(1)
          expect(yield* statuses).toBe("queued,running")
          yield* release(latch)
          yield* allCompleted(a.url, "single", taken)
          expect(activity.get("single")!.max).toBe(1)
          yield* a.stop
          if (b !== a) yield* b.stop
        }),
      120_000
    )

    it.scopedLive.skipIf(backend.shared)(
      "a restart with over 100 executions left running and queued ones with free slots: start-up ends, and each execution starts once",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          let [a] = yield* instances(url)
          const latch = "restart-admit"
          // Over 100 left running: the takeover claims them in two statements, the sweep admitting between.
          const groups = Array.from({ length: 210 }, (_, i) => `admit-${i}`)
          yield* Effect.forEach(groups, (group) =>
            Effect.gen(function*() {
              yield* post(`${a.url}/workflows/single/run`, {
                input: { group, latch },
                options: { executionId: `${group}-hold` }
              })
              const queued = yield* post(`${a.url}/workflows/single/run`, {
                input: { group, latch },
                options: { executionId: `${group}-next` }
              })
              expect(queued.body.data.waiting).toBe("concurrency")
            }), { concurrency: 8 })
          yield* a.stop
          // As a kill right after half the holders ended leaves it: their slots free, the next ones still
          // queued; the other holders left running, for the start-up takeover to find.
          const ended = groups.filter((_, i) => i % 2 === 0).map((group) => `${group}-hold`)
          const file = new Database(url.slice("file:".length))
          const end = file.prepare("UPDATE workflow_executions SET status = 'cancelled', owner = NULL WHERE id = ?")
          for (const id of ended) end.run(id)
          file.close()
          resetActivity("single")
          ;[a] = yield* instances(url)
          const all = groups.flatMap((group) => [`${group}-hold`, `${group}-next`])
          const expected = all.filter((id) => !ended.includes(id))
          yield* release(latch)
          yield* allCompleted(a.url, "single", expected)
          expect([...activity.get("single")!.starts].sort()).toEqual([...expected].sort())
          yield* a.stop
        }),
      120_000
    )

    it.scopedLive(
      "races on the slot claim (100 trials): 4 concurrent starts of one key admit exactly one; reject answers 201 once and 409 thrice",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* instances(yield* backend.url)
          const urlOf = (i: number) => (i % 2 === 0 ? a : b).url
          const trials = Array.from({ length: 100 }, (_, i) => i)
          yield* Effect.forEach(trials, (t) =>
            Effect.gen(function*() {
              const ids = [0, 1, 2, 3].map((i) => `race-${t}-${i}`)
              const answers = yield* Effect.all(
                ids.map((id, i) =>
                  post(`${urlOf(i)}/workflows/single/run`, {
                    input: { group: `race-${t}`, latch: `${backend.name}-race-${t}` },
                    options: { executionId: id }
                  })
                ),
                { concurrency: "unbounded" }
              )
              expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 201])
              expect(answers.filter((answer) => answer.body.data.waiting === undefined)).toHaveLength(1)
              const rows = (yield* rowsOf(a.sql, "single")).filter((row) => ids.includes(row.id))
              expect(rows.filter((row) => row.status === "running")).toHaveLength(1)
              expect(rows.filter((row) => row.status === "queued")).toHaveLength(3)
              yield* release(`${backend.name}-race-${t}`)
            }), { concurrency: 10 })
          yield* allCompleted(a.url, "single", trials.flatMap((t) => [0, 1, 2, 3].map((i) => `race-${t}-${i}`)))
          // Reject: the key is the workflow's, so one trial at a time.
          for (let t = 0; t < 30; t++) {
            const answers = yield* Effect.all(
              [0, 1, 2, 3].map((i) =>
                post(`${urlOf(i)}/workflows/solo/run`, {
                  input: { latch: `${backend.name}-solo-${t}` },
                  options: { executionId: `solo-${t}-${i}` }
                })
              ),
              { concurrency: "unbounded" }
            )
            expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409, 409, 409])
            const started = [0, 1, 2, 3].filter((i) => answers[i].status === 201).map((i) => `solo-${t}-${i}`)
            const rows = (yield* rowsOf(a.sql, "solo")).filter((row) => row.id.startsWith(`solo-${t}-`))
            expect(rows.map((row) => row.id)).toEqual(started)
            yield* release(`${backend.name}-solo-${t}`)
            yield* allCompleted(a.url, "solo", started)
          }
          yield* a.stop
          if (b !== a) yield* b.stop
        }),
      240_000
    )
  })
}
