import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { join } from "node:path"
import { activity, eventually, post, release, resetActivity, rowsOf, startInstance } from "./support/concurrency.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson, tempDir } from "./support/TestServer.js"

/**
 * Shares per owner on concurrency queues (issue #42, item 12; settled 16), on SQLite (one instance) and
 * on Postgres (two instances of one database): a start past `workflows.maxQueuedPerKey` executions
 * queued by its owner on its key is a 429 naming the setting, and leaves nothing; the count and the
 * insert are one step, so starts racing for the last places queue exactly the bound. Under
 * `scope: 'global'`, `interrupt` cancels only the starter's own executions; another owner's running
 * one keeps running and the start waits its turn.
 */

const BOUND = 3
const TRIALS = 200

const backends = [
  { name: "SQLite", skip: false, shared: false, url: Effect.map(tempDir, (dir) => `file:${join(dir, "bounds.db")}`) },
  { name: "Postgres", skip: !postgresAvailable, shared: true, url: freshPostgresDatabase }
] as const

const statusesOf = (url: string, workflowId: string, ids: ReadonlyArray<string>) =>
  Effect.forEach(
    ids,
    (id) =>
      Effect.map(
        fetchJson(`${url}/workflows/${workflowId}/executions/${id}/state`),
        (r) => r.body.data?.status as string
      )
  )

const settled = (url: string, workflowId: string, ids: ReadonlyArray<string>, expected: ReadonlyArray<string>) =>
  eventually(
    statusesOf(url, workflowId, ids),
    (all) => all.join() === expected.join(),
    `${workflowId}: ${expected.join()}`,
    60_000
  )

const overTheBound = (workflowId: string, key: string) =>
  `Workflow ${workflowId} already has ${BOUND} executions queued for the concurrency key "${key}" by this caller, the most workflows.maxQueuedPerKey allows`

for (const backend of backends) {
  describe.skipIf(backend.skip)(`concurrency queues per owner (${backend.name})`, () => {
    /** Two instances on Postgres, one on SQLite; stopped when the test ends, however it ends. */
    const instances = (url: string) =>
      Effect.gen(function*() {
        const a = yield* startInstance(url, "bounds-a", { maxQueuedPerKey: BOUND })
        yield* Effect.addFinalizer(() => a.stop)
        if (!backend.shared) return [a, a] as const
        const b = yield* startInstance(url, "bounds-b", { maxQueuedPerKey: BOUND })
        yield* Effect.addFinalizer(() => b.stop)
        return [a, b] as const
      })

    it.scopedLive(
      `starts racing for the last places (${TRIALS} trials): exactly ${BOUND} queued, the others 429 and stored nowhere`,
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* instances(yield* backend.url)
          const outcomes = yield* Effect.forEach(Array.from({ length: TRIALS }, (_, t) => t), (t) =>
            Effect.gen(function*() {
              const group = `bound-${t}`
              const latch = `${backend.name}-bound-${t}`
              const holder = yield* post(`${a.url}/workflows/single/run`, {
                input: { group, latch },
                options: { executionId: `${group}-hold` }
              })
              expect(holder.body.data.waiting).toBeUndefined()
              // One place taken before the race: two left for six starts.
              const first = yield* post(`${b.url}/workflows/single/run`, {
                input: { group, ms: 1 },
                options: { executionId: `${group}-q` }
              })
              expect(first.body.data.waiting).toBe("concurrency")
              const ids = Array.from({ length: 6 }, (_, i) =>
                `${group}-${i}`)
              const answers = yield* Effect.all(
                ids.map((id, i) =>
                  post(`${(i % 2 === 0 ? a : b).url}/workflows/single/run`, {
                    input: { group, ms: 1 },
                    options: { executionId: id }
                  })
                ),
                { concurrency: "unbounded" }
              )
              const queued = ids.filter((_, i) => answers[i].status === 201)
              for (const answer of answers) {
                if (answer.status === 201) expect(answer.body.data.waiting).toBe("concurrency")
                else {expect(answer).toMatchObject({
                    status: 429,
                    body: { success: false, error: overTheBound("single", group) }
                  })}
              }
              const rows = (yield* rowsOf(a.sql, "single")).filter((row) => row.id.startsWith(`${group}-`))
              expect(rows.filter((row) => row.status === "queued").map((row) => row.id).sort()).toEqual(
                [`${group}-q`, ...queued].sort()
              )
              expect(rows).toHaveLength(1 + BOUND)
              // The key's queue drains before the next trials: the sweep admits every queued key each time.
              yield* release(latch)
              return queued.length
            }), { concurrency: 8 })
          expect(outcomes.filter((n) =>
            n === BOUND - 1
          )).toHaveLength(TRIALS)
        }),
      300_000
    )

    it.scopedLive(
      "the bound is per owner: under scope 'global' another owner still queues; a freed place is taken again",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* instances(yield* backend.url)
          resetActivity("shared")
          const latch = `${backend.name}-owners`
          const run = (url: string, userId: string, id: string, input: object = { ms: 1 }) =>
            post(`${url}/workflows/shared/run`, { input, options: { executionId: id, userId } })
          expect((yield* run(a.url, "ann", "own-hold", { latch })).body.data.waiting).toBeUndefined()
          for (let i = 0; i < BOUND; i++) {
            expect((yield* run(b.url, "ann", `own-ann-${i}`)).body.data.waiting).toBe("concurrency")
          }
          const past = yield* run(a.url, "ann", "own-ann-past")
          expect(past).toMatchObject({ status: 429, body: { error: overTheBound("shared", "shared") } })
          for (let i = 0; i < BOUND; i++) {
            expect((yield* run(a.url, "bob", `own-bob-${i}`)).body.data.waiting).toBe("concurrency")
          }
          expect((yield* run(b.url, "bob", "own-bob-past")).status).toBe(429)
          expect((yield* fetchJson(`${a.url}/workflows/shared/executions/own-ann-past/state`)).status).toBe(404)
          // A cancelled queued execution frees its place.
          expect((yield* post(`${a.url}/workflows/shared/executions/own-ann-0/cancel`)).status).toBe(200)
          expect((yield* run(b.url, "ann", "own-ann-again")).body.data.waiting).toBe("concurrency")
          yield* release(latch)
          const done = ["own-hold", "own-ann-1", "own-ann-2", "own-ann-again", "own-bob-0", "own-bob-1", "own-bob-2"]
          yield* settled(a.url, "shared", done, done.map(() => "completed"))
        }),
      120_000
    )

    it.scopedLive(
      "scope 'global' with onBusy 'interrupt': a start cancels only its owner's executions, else waits its turn",
      () =>
        Effect.gen(function*() {
          const [a, b] = yield* instances(yield* backend.url)
          resetActivity("shared-latest")
          const latch = `${backend.name}-tenant`
          const run = (url: string, userId: string, id: string, input: object) =>
            post(`${url}/workflows/shared-latest/run`, { input, options: { executionId: id, userId } })
          expect((yield* run(a.url, "ann", "tenant-ann", { latch })).body.data.waiting).toBeUndefined()
          yield* eventually(Effect.sync(() => activity.get("shared-latest")!.starts), (s) =>
            s.includes("tenant-ann"), "ann's executing")
          // Another tenant's start: ann's execution keeps running; bob's waits.
          const bob = yield* run(b.url, "bob", "tenant-bob-0", { latch })
          expect(bob.body.data.waiting).toBe("concurrency")
          // Bob's newer start supersedes bob's own queued one, never ann's.
          const bobAgain = yield* run(a.url, "bob", "tenant-bob-1", { ms: 1 })
          expect(bobAgain.body.data.waiting).toBe("concurrency")
          yield* settled(a.url, "shared-latest", ["tenant-ann", "tenant-bob-0", "tenant-bob-1"], [
            "running",
            "cancelled",
            "running"
          ])
          const events = yield* fetchJson(`${a.url}/workflows/shared-latest/executions/tenant-bob-0/events`)
          expect(
            events.body.data.events.find((e: { type: string }) =>
              e.type === "workflow-cancelled"
            ).reason
          ).toBe("superseded by tenant-bob-1")
          // Ann's newer start supersedes ann's running one.
          yield* run(b.url, "ann", "tenant-ann-1", { ms: 1 })
          yield* release(latch)
          yield* settled(
            a.url,
            "shared-latest",
            ["tenant-ann", "tenant-bob-0", "tenant-bob-1", "tenant-ann-1"],
            ["cancelled", "cancelled", "completed", "completed"]
          )
          expect(activity.get("shared-latest")!.max).toBe(1)
        }),
      120_000
    )
  })
}
