import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  activity,
  concurrencyApp,
  concurrencyConfig,
  eventually,
  post,
  release,
  resetActivity,
  rowsOf,
  sqlOf,
  tickingApp
} from "./support/concurrency.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Workflow concurrency limits (issue #33, item 3) over HTTP on SQLite, one instance: the limit under
 * concurrent starts, the queued state as clients see it (running, waiting: 'concurrency', queuedAt,
 * ?waiting=concurrency), FIFO admission, cancel of a queued execution, a suspended execution freeing
 * its slot, keys and their bound, onBusy reject and interrupt, the queue-depth metric.
 */

const stateOf = (url: string, workflowId: string, id: string) =>
  Effect.map(fetchJson(`${url}/workflows/${workflowId}/executions/${id}/state`), (r) => r.body.data)

const statusOf = (url: string, workflowId: string, id: string) =>
  Effect.map(stateOf(url, workflowId, id), (s) => s.status as string)

const allCompleted = (url: string, workflowId: string, ids: ReadonlyArray<string>) =>
  eventually(
    Effect.forEach(ids, (id) => statusOf(url, workflowId, id)),
    (all) => all.every((s) => s === "completed"),
    "all completed"
  )

describe("workflow concurrency limits (SQLite)", () => {
  layer(TestServerLive({ app: concurrencyApp, config: concurrencyConfig }), { excludeTestServices: true })(
    "one instance",
    (it) => {
      it.effect("a limit of 2 under 20 concurrent executes: never more than 2 at once, all 20 complete", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          resetActivity("pair")
          const answers = yield* Effect.all(
            Array.from(
              { length: 20 },
              (_, i) =>
                post(`${url}/workflows/pair/execute`, { input: { ms: 60 }, options: { executionId: `pair-${i}` } })
            ),
            { concurrency: "unbounded" }
          )
          expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200))
          expect(answers.every((a) => a.body.data.status === "completed")).toBe(true)
          const seen = activity.get("pair")!
          expect(seen.starts).toHaveLength(20)
          expect(seen.max).toBe(2)
          const rows = yield* rowsOf(yield* sqlOf, "pair")
          expect(rows.every((row) => row.status === "completed")).toBe(true)
        }))

      it.effect("queued: /run answers 201 waiting; state and listing show it running with waiting and queuedAt; FIFO; a queued one is cancelled", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          resetActivity("single")
          const first = yield* post(`${url}/workflows/single/run`, {
            input: { group: "fifo", latch: "fifo" },
            options: { executionId: "fifo-0" }
          })
          expect(first.status).toBe(201)
          expect(first.body.data.waiting).toBeUndefined()
          const queued: Array<string> = []
          for (let i = 1; i <= 5; i++) {
            const answer = yield* post(`${url}/workflows/single/run`, {
              input: { group: "fifo", ms: 5 },
              options: { executionId: `fifo-${i}` }
            })
            expect(answer.status).toBe(201)
            expect(answer.body.data).toMatchObject({ status: "running", waiting: "concurrency" })
            expect(Date.parse(answer.body.data.queuedAt)).toBeGreaterThan(0)
            queued.push(`fifo-${i}`)
          }
          // Under an Idempotency-Key too, and its retry says the same.
          for (let attempt = 0; attempt < 2; attempt++) {
            const keyed = yield* fetchJson(`${url}/workflows/single/run`, {
              method: "POST",
              headers: { "content-type": "application/json", "idempotency-key": "fifo-keyed" },
              body: JSON.stringify({ input: { group: "fifo-keyed", latch: "fifo" } })
            })
            expect(keyed.status).toBe(201)
            expect(keyed.body.data.waiting).toBeUndefined()
            const queuedKeyed = yield* fetchJson(`${url}/workflows/single/run`, {
              method: "POST",
              headers: { "content-type": "application/json", "idempotency-key": "fifo-keyed-2" },
              body: JSON.stringify({ input: { group: "fifo-keyed", ms: 1 } })
            })
            expect(queuedKeyed.body.data).toMatchObject({ status: "running", waiting: "concurrency" })
          }
          // Another group's key is free: it runs at once.
          const other = yield* post(`${url}/workflows/single/run`, {
            input: { group: "other", ms: 5 },
            options: { executionId: "fifo-other" }
          })
          expect(other.body.data.waiting).toBeUndefined()
          const state = yield* stateOf(url, "single", "fifo-1")
          expect(state).toMatchObject({ status: "running", waiting: "concurrency" })
          expect(state.queuedAt).toBe(state.startAt)
          const listed = yield* fetchJson(`${url}/workflows/executions?workflowId=single&waiting=concurrency`)
          expect(listed.status).toBe(200)
          const fifoIds = (data: Array<any>) =>
            data.map((e) => e.id as string).filter((id) => id.startsWith("fifo-")).sort()
          expect(fifoIds(listed.body.data)).toEqual([...queued].sort())
          expect(listed.body.data).toHaveLength(queued.length + 1)
          expect(
            listed.body.data.every((e: any) =>
              e.status === "running" && e.waiting === "concurrency" && typeof e.queuedAt === "string"
            )
          ).toBe(true)
          const running = yield* fetchJson(`${url}/workflows/executions?workflowId=single&status=running`)
          expect(running.body.data.map((e: any) => e.id)).toEqual(expect.arrayContaining(["fifo-0", ...queued]))
          // Suspending a queued one is refused (nothing runs); cancelling it takes it out of the queue.
          const suspended = yield* post(`${url}/workflows/single/executions/fifo-3/suspend`, {})
          expect(suspended.status).toBe(400)
          expect(suspended.body.error).toContain("queued for a concurrency slot")
          const cancelled = yield* post(`${url}/workflows/single/executions/fifo-3/cancel`, { reason: "not needed" })
          expect(cancelled.status).toBe(200)
          expect(cancelled.body.data.status).toBe("cancelled")
          const after = yield* fetchJson(`${url}/workflows/executions?workflowId=single&waiting=concurrency`)
          expect(fifoIds(after.body.data)).toEqual(["fifo-1", "fifo-2", "fifo-4", "fifo-5"])
          yield* release("fifo")
          yield* allCompleted(url, "single", ["fifo-0", "fifo-1", "fifo-2", "fifo-4", "fifo-5"])
          expect(yield* statusOf(url, "single", "fifo-3")).toBe("cancelled")
          // FIFO by creation; the cancelled one never started.
          const starts = activity.get("single")!.starts.filter((id) => id.startsWith("fifo-") && id !== "fifo-other")
          expect(starts).toEqual(["fifo-0", "fifo-1", "fifo-2", "fifo-4", "fifo-5"])
          const done = yield* stateOf(url, "single", "fifo-5")
          expect(done.waiting).toBeUndefined()
          expect(done.queuedAt).toBeUndefined()
        }))

      it.effect("a queued /stream follows the execution once it starts, to its result", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          yield* post(`${url}/workflows/single/run`, {
            input: { group: "streamed", latch: "streamed" },
            options: { executionId: "streamed-0" }
          })
          const stream = yield* Effect.fork(Effect.promise(() =>
            fetch(`${url}/workflows/single/stream`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ input: { group: "streamed", ms: 1 }, options: { executionId: "streamed-1" } })
            }).then(async (response) => ({ status: response.status, text: await response.text() }))
          ))
          yield* eventually(stateOf(url, "single", "streamed-1"), (state) =>
            state?.waiting === "concurrency", "the streamed one queued")
          yield* release("streamed")
          const { status, text } = yield* Effect.fromFiber(stream)
          expect(status).toBe(200)
          expect(text).toContain("step-complete")
          expect(text).toMatch(/"type":"workflow-result"[^\n]*"status":"completed"/)
        }))

      it.effect("a suspended execution frees its slot: the next one of its key runs at once", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const suspended = yield* post(`${url}/workflows/single/execute`, {
            input: { group: "approve", suspend: true, ms: 5 },
            options: { executionId: "approve-0" }
          })
          expect(suspended.body.data.status).toBe("suspended")
          const next = yield* post(`${url}/workflows/single/run`, {
            input: { group: "approve", latch: "approve" },
            options: { executionId: "approve-1" }
          })
          expect(next.status).toBe(201)
          expect(next.body.data.waiting).toBeUndefined()
          // With the slot taken, another start of the key queues.
          const third = yield* post(`${url}/workflows/single/run`, {
            input: { group: "approve", ms: 5 },
            options: { executionId: "approve-2" }
          })
          expect(third.body.data.waiting).toBe("concurrency")
          yield* release("approve")
          yield* allCompleted(url, "single", ["approve-1", "approve-2"])
        }))

      it.effect("a resume while the key is full queues again: it waits (waiting: concurrency), then runs once the slot frees", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          resetActivity("single")
          const suspended = yield* post(`${url}/workflows/single/execute`, {
            input: { group: "rq", suspend: true, ms: 5 },
            options: { executionId: "rq-0" }
          })
          expect(suspended.body.data.status).toBe("suspended")
          const holder = yield* post(`${url}/workflows/single/run`, {
            input: { group: "rq", latch: "rq" },
            options: { executionId: "rq-1" }
          })
          expect(holder.body.data.waiting).toBeUndefined()
          yield* eventually(
            Effect.sync(() => activity.get("single")!.starts),
            (starts) => starts.includes("rq-1"),
            "the holder executing"
          )
          const resume = yield* Effect.fork(
            post(`${url}/workflows/single/executions/rq-0/resume`, { resumeData: { ok: true } })
          )
          const waiting = yield* eventually(
            stateOf(url, "single", "rq-0"),
            (state) => state.waiting === "concurrency",
            "the resumed one queued"
          )
          expect(waiting.status).toBe("running")
          expect(activity.get("single")!.starts).not.toContain("rq-0")
          yield* release("rq")
          const resumed = yield* Effect.fromFiber(resume)
          expect(resumed.body.data.status).toBe("completed")
          expect(activity.get("single")!.starts).toEqual(["rq-1", "rq-0"])
          expect(activity.get("single")!.max).toBe(1)
        }))

      it.effect("a sleeper holds no slot while parked; woken while its key is full, it queues again and runs after", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          resetActivity("napper")
          const sleeper = yield* post(`${url}/workflows/napper/run`, {
            input: { group: "nap", ms: 600 },
            options: { executionId: "nap-0" }
          })
          expect(sleeper.body.data.waiting).toBeUndefined()
          yield* eventually(
            stateOf(url, "napper", "nap-0"),
            (state) => typeof state.waitingUntil === "string",
            "the sleeper parked"
          )
          const holder = yield* post(`${url}/workflows/napper/run`, {
            input: { group: "nap", latch: "nap" },
            options: { executionId: "nap-1" }
          })
          expect(holder.body.data.waiting).toBeUndefined()
          // Past its wake time, with the slot taken: queued again.
          yield* eventually(
            stateOf(url, "napper", "nap-0"),
            (state) => state.waiting === "concurrency",
            "the woken one queued"
          )
          expect(activity.get("napper")!.starts).toEqual(["nap-1"])
          yield* release("nap")
          yield* allCompleted(url, "napper", ["nap-0", "nap-1"])
          expect(activity.get("napper")!.starts).toEqual(["nap-1", "nap-0"])
          expect(activity.get("napper")!.max).toBe(1)
        }))

      it.effect("keys are per owner: another user's start of the same key runs at once; scope 'global' shares the key", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const start = (workflowId: string, id: string, userId: string, latch: string) =>
            post(`${url}/workflows/${workflowId}/run`, {
              input: { group: "owners", latch },
              options: { executionId: id, userId }
            })
          expect((yield* start("single", "own-a", "alice", "owners")).body.data.waiting).toBeUndefined()
          expect((yield* start("single", "own-b", "bob", "owners")).body.data.waiting).toBeUndefined()
          expect((yield* start("single", "own-a2", "alice", "owners")).body.data.waiting).toBe("concurrency")
          expect((yield* start("shared", "glob-a", "alice", "owners")).body.data.waiting).toBeUndefined()
          expect((yield* start("shared", "glob-b", "bob", "owners")).body.data.waiting).toBe("concurrency")
          yield* release("owners")
          yield* allCompleted(url, "single", ["own-a", "own-b", "own-a2"])
          yield* allCompleted(url, "shared", ["glob-a", "glob-b"])
        }))

      it.effect("a key over 256 characters is a 400 naming the bound; 256 is fine", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const long = yield* post(`${url}/workflows/single/run`, { input: { group: "k".repeat(257) } })
          expect(long.status).toBe(400)
          expect(long.body.error).toContain("257 characters, over the 256 allowed")
          const fits = yield* post(`${url}/workflows/single/execute`, { input: { group: "k".repeat(256), ms: 1 } })
          expect(fits.status).toBe(200)
          expect(fits.body.data.status).toBe("completed")
        }))

      it.effect("onBusy reject: a start while the key is full is a 409 naming the limit, and leaves no execution", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const sql = yield* sqlOf
          const first = yield* post(`${url}/workflows/solo/run`, {
            input: { latch: "solo" },
            options: { executionId: "solo-0" }
          })
          expect(first.status).toBe(201)
          for (const route of ["run", "execute", "stream"]) {
            const refused = yield* post(`${url}/workflows/solo/${route}`, {
              input: { ms: 1 },
              options: { executionId: `solo-${route}` }
            })
            expect(refused.status).toBe(409)
            expect(refused.body.error).toContain("its limit")
            expect(refused.body.error).toContain("already runs 1 execution")
          }
          expect((yield* rowsOf(sql, "solo")).map((row) => row.id)).toEqual(["solo-0"])
          yield* release("solo")
          yield* allCompleted(url, "solo", ["solo-0"])
          const again = yield* post(`${url}/workflows/solo/execute`, { input: { ms: 1 } })
          expect(again.body.data.status).toBe("completed")
        }))

      it.effect("onBusy interrupt: a start cancels the running one with the reason 'superseded by <id>', then runs", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const first = yield* post(`${url}/workflows/latest/run`, {
            input: { latch: "latest" },
            options: { executionId: "latest-0" }
          })
          expect(first.status).toBe(201)
          yield* eventually(
            Effect.sync(() => activity.get("latest")?.active ?? 0),
            (n) => n === 1,
            "the first one executing"
          )
          const second = yield* post(`${url}/workflows/latest/run`, {
            input: { ms: 5 },
            options: { executionId: "latest-1" }
          })
          expect(second.status).toBe(201)
          expect(second.body.data.waiting).toBeUndefined()
          expect(yield* statusOf(url, "latest", "latest-0")).toBe("cancelled")
          const events = yield* fetchJson(`${url}/workflows/latest/executions/latest-0/events`)
          const cancelled = events.body.data.events.find((e: any) => e.type === "workflow-cancelled")
          expect(cancelled.reason).toBe("superseded by latest-1")
          yield* allCompleted(url, "latest", ["latest-1"])
        }))

      it.effect("onBusy interrupt: two starts at once never supersede each other; the newer one completes (30 trials)", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          for (let trial = 0; trial < 30; trial++) {
            const ids = [`both-${trial}-a`, `both-${trial}-b`]
            const answers = yield* Effect.all(
              ids.map((executionId) =>
                post(`${url}/workflows/latest/run`, { input: { ms: 5 }, options: { executionId } })
              ),
              { concurrency: "unbounded" }
            )
            expect(answers.map((answer) => answer.status)).toEqual([201, 201])
            const settled = yield* Effect.forEach(
              ids,
              (id) =>
                eventually(
                  statusOf(url, "latest", id),
                  (status) => status === "completed" || status === "cancelled",
                  `${id} settled`
                )
            )
            // At most the older is superseded: one of the two always runs to its end.
            expect(
              settled.filter((status) => status === "completed").length
            ).toBeGreaterThanOrEqual(1)
          }
        }))

      it.effect("the row of a key with nothing queued or running is deleted by a later sweep", () =>
        Effect.gen(function*() {
          const sql = yield* sqlOf
          const key = JSON.stringify(["single", "-", "idle-key"])
          const { url } = yield* TestServer
          const done = yield* post(`${url}/workflows/single/execute`, { input: { group: "idle-key", ms: 1 } })
          expect(done.body.data.status).toBe("completed")
          const rowsOfKey = sql<{ key: string }>`SELECT key FROM workflow_concurrency WHERE key = ${key}`.pipe(
            Effect.orDie
          )
          expect(yield* rowsOfKey).toHaveLength(1)
          yield* eventually(rowsOfKey, (rows) => rows.length === 0, "the idle key's row deleted")
        }))

      it.effect("the queue depth is a metric per workflow (never per key)", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          yield* post(`${url}/workflows/pair/run`, { input: { latch: "depth" }, options: { executionId: "depth-0" } })
          yield* post(`${url}/workflows/pair/run`, { input: { latch: "depth" }, options: { executionId: "depth-1" } })
          yield* post(`${url}/workflows/pair/run`, { input: { latch: "depth" }, options: { executionId: "depth-2" } })
          const metrics = yield* eventually(
            Effect.promise(() => fetch(`${url}/metrics`).then((response) => response.text())),
            (text) => /^workflow_queue_depth\{[^}]*workflow_id="pair"[^}]*\} 1$/m.test(text),
            "a queue depth of 1 for pair"
          )
          expect(metrics).not.toMatch(/workflow_queue_depth\{[^}]*key=/)
          yield* release("depth")
          yield* allCompleted(url, "pair", ["depth-0", "depth-1", "depth-2"])
        }))
    }
  )

  layer(TestServerLive({ app: tickingApp, config: { ...concurrencyConfig, schedules: { minIntervalMs: 1000 } } }), {
    excludeTestServices: true
  })(
    "schedules",
    (it) => {
      it.effect("a limited workflow's schedule firings queue behind the running one, then run one at a time", () =>
        Effect.gen(function*() {
          const sql = yield* sqlOf
          const rows = yield* eventually(
            rowsOf(sql, "ticking"),
            (rows) => rows.filter((row) => row.status === "queued").length >= 2,
            "queued firings"
          )
          expect(rows.filter((row) => row.status === "running")).toHaveLength(1)
          expect(rows.every((row) => row.id.startsWith("sched:"))).toBe(true)
          yield* release("ticking")
          yield* eventually(
            rowsOf(sql, "ticking"),
            (later) =>
              later.filter((row) => rows.some((r) => r.id === row.id)).every((row) => row.status === "completed"),
            "the firings completed"
          )
          expect(activity.get("ticking")!.max).toBe(1)
        }))
    }
  )
})
