import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import { SignJWT } from "jose"
import { join } from "node:path"
import { defineApp } from "../src/App.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { settled, startedStep, withService } from "./support/serviceOnDatabase.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Issue #33, item 4: replay (a new execution that copies the outputs of the steps before `fromStep`
 * from an execution and runs from there) and restart (a replay of a failed execution from its failed
 * step). Every step counts its runs per execution, so a copied step is seen not to run again.
 */

const runs = new Map<string, number>()
const ran = (executionId: string, stepId: string) => runs.get(`${executionId}:${stepId}`) ?? 0
const count = (executionId: string, stepId: string) =>
  runs.set(`${executionId}:${stepId}`, ran(executionId, stepId) + 1)

/** What the steps do now: `finish` fails while `failFinish`; `shape` never ends while `holdShape`. */
const flags = { failFinish: false, holdShape: false }

const shape = (id: string) => ({
  id,
  name: id,
  purpose: "replayed",
  input: Schema.Struct({ n: Schema.Number }),
  result: Schema.Unknown
})
const load = {
  id: "load",
  execute: ({ data, executionId }: any) => (count(executionId, "load"), { n: data.n, loaded: true })
}
const shapeStep = {
  id: "shape",
  execute: ({ data, executionId }: any) => {
    count(executionId, "shape")
    return flags.holdShape ? Effect.never : { ...data, shaped: data.n * 2 }
  }
}
const finish = {
  id: "finish",
  execute: ({ data, executionId }: any) => {
    count(executionId, "finish")
    if (flags.failFinish) throw new Error("finish is broken")
    return { ...data, finished: true }
  }
}
const counted = workflow(shape("counted")).andThen(load).andThen(shapeStep).andThen(finish)
/** Release 2 of `counted`: a step inserted before `shape`, which no execution of release 1 committed. */
const countedV2 = workflow(shape("counted")).andThen(load)
  .andThen({ id: "audit", execute: ({ data }: any) => ({ ...data, audited: true }) }).andThen(shapeStep).andThen(finish)

const replayOf = (url: string, executionId: string, body: unknown, headers: Record<string, string> = {}) =>
  fetchJson(`${url}/workflows/counted/executions/${executionId}/replay`, {
    ...json(body),
    headers: { "content-type": "application/json", ...headers }
  })
const restartOf = (url: string, executionId: string, headers: Record<string, string> = {}) =>
  fetchJson(`${url}/workflows/counted/executions/${executionId}/restart`, { method: "POST", headers })
const recordOf = (url: string, executionId: string, headers: Record<string, string> = {}) =>
  fetchJson(`${url}/workflows/executions/${executionId}`, { headers })

/** A completed execution of `counted` with input n. */
const completed = (url: string, n: number) =>
  Effect.map(fetchJson(`${url}/workflows/counted/execute`, json({ input: { n } })), (response) => {
    expect(response.body.data).toMatchObject({
      status: "completed",
      result: { n, loaded: true, shaped: 2 * n, finished: true }
    })
    return response.body.data.executionId as string
  })

const suite = (databaseUrl: Effect.Effect<string, never, any>, twoInstances: boolean) => {
  it.scopedLive(
    "replay from the 2nd step reuses step 1's output (it does not run again), runs the rest; linked on both records",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [counted], (base) =>
          Effect.gen(function*() {
            const original = yield* completed(base, 3)
            const answer = yield* replayOf(base, original, { fromStep: "shape" })
            expect(answer.status).toBe(201)
            const replay = answer.body.data.executionId as string
            expect(replay).not.toBe(original)
            expect(answer.body.data).toMatchObject({
              workflowId: "counted",
              replayOf: { executionId: original, fromStep: "shape" }
            })
            const state = yield* settled(base, "counted", replay)
            expect(state).toMatchObject({
              status: "completed",
              result: { n: 3, loaded: true, shaped: 6, finished: true }
            })
            expect([ran(replay, "load"), ran(replay, "shape"), ran(replay, "finish")]).toEqual([0, 1, 1])
            expect(state.replayOf).toEqual({ executionId: original, fromStep: "shape" })

            const replayed = (yield* recordOf(base, replay)).body.data
            expect(replayed.replayOf).toEqual({ executionId: original, fromStep: "shape" })
            const copied = replayed.events.filter((e: any) => e.type === "step-complete" && e.status === "copied")
            expect(copied.map((e: any) => [e.from, e.output])).toEqual([["load", { n: 3, loaded: true }]])
            const originalRecord = (yield* recordOf(base, original)).body.data
            expect(originalRecord.replays).toEqual([{
              executionId: replay,
              fromStep: "shape",
              createdAt: expect.any(String)
            }])
            expect(originalRecord.replayOf).toBeUndefined()
            const listed = yield* fetchJson(`${base}/workflows/executions?workflowId=counted`)
            const inListing = listed.body.data.find((e: any) => e.id === original)
            expect(inListing.replays.map((r: any) => r.executionId)).toEqual([replay])
            expect((yield* fetchJson(`${base}/workflows/counted/executions/${original}/state`)).body.data.replays)
              .toHaveLength(1)
          }))
      }),
    60_000
  )

  it.scopedLive(
    "input only from the first step; unknown and inner steps are 400; input from the first step is the replay's",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [counted], (base) =>
          Effect.gen(function*() {
            const original = yield* completed(base, 4)
            const withInput = yield* replayOf(base, original, { fromStep: "shape", input: { n: 9 } })
            expect(withInput.status).toBe(400)
            expect(withInput.body.error).toContain("only when replaying from the first step (load)")
            const unknown = yield* replayOf(base, original, { fromStep: "nope" })
            expect(unknown.status).toBe(400)
            expect(unknown.body.error).toContain("has no step nope")
            const inner = yield* replayOf(base, original, { fromStep: "shape/inner" })
            expect(inner.status).toBe(400)
            expect(inner.body.error).toContain("is inside step shape")
            expect((yield* replayOf(base, original, { fromStep: "load", input: { n: "x" } })).status).toBe(400)
            expect((yield* replayOf(base, original, {})).status).toBe(400)
            // A client-sized path is bounded before it is looked up or echoed in a message.
            const long = yield* replayOf(base, original, { fromStep: "x".repeat(100_000) })
            expect(long.status).toBe(400)
            expect(long.body.error).toContain("must be at most 1000 characters")
            expect(long.body.error.length).toBeLessThan(2000)
            expect((yield* replayOf(base, "missing", { fromStep: "load" })).status).toBe(404)

            const fresh = yield* replayOf(base, original, { fromStep: "load", input: { n: 5 } })
            expect(fresh.status).toBe(201)
            const state = yield* settled(base, "counted", fresh.body.data.executionId)
            expect(state).toMatchObject({
              status: "completed",
              input: { n: 5 },
              result: { n: 5, shaped: 10, finished: true }
            })
            expect(ran(fresh.body.data.executionId, "load")).toBe(1)
          }))
      }),
    60_000
  )

  it.scopedLive(
    "restart: a failed execution from its failed step (a new execution); a completed one is 409",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [counted], (base) =>
          Effect.gen(function*() {
            flags.failFinish = true
            const failed = yield* fetchJson(`${base}/workflows/counted/execute`, json({ input: { n: 7 } }))
            flags.failFinish = false
            expect(failed.status).toBe(500)
            const original = failed.body.executionId as string
            expect((yield* fetchJson(`${base}/workflows/counted/executions/${original}/state`)).body.data.status).toBe(
              "error"
            )

            const done = yield* completed(base, 1)
            const refused = yield* restartOf(base, done)
            expect(refused.status).toBe(409)
            expect(refused.body.error).toContain("only a failed execution (error) can be restarted")

            const restarted = yield* restartOf(base, original)
            expect(restarted.status).toBe(201)
            const restart = restarted.body.data.executionId as string
            expect(restart).not.toBe(original)
            expect(restarted.body.data.replayOf).toEqual({ executionId: original, fromStep: "finish" })
            const state = yield* settled(base, "counted", restart)
            expect(state).toMatchObject({ status: "completed", result: { n: 7, shaped: 14, finished: true } })
            expect([ran(restart, "load"), ran(restart, "shape"), ran(restart, "finish")]).toEqual([0, 0, 1])
            // Never in place: the original is still the failed execution it was.
            expect((yield* fetchJson(`${base}/workflows/counted/executions/${original}/state`)).body.data)
              .toMatchObject({
                status: "error",
                replays: [{ executionId: restart, fromStep: "finish" }]
              })
          }))
      }),
    60_000
  )

  it.scopedLive(
    "Idempotency-Key: concurrent replays with one key make one execution (10 trials); another body is 422; unkeyed ones all count",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [counted], (base) =>
          Effect.gen(function*() {
            const original = yield* completed(base, 2)
            const replays = new Set<string>()
            for (let trial = 0; trial < 10; trial++) {
              const key = `replay-${trial}-${Math.random().toString(36).slice(2)}`
              const answers = yield* Effect.all(
                Array.from(
                  { length: 8 },
                  () => replayOf(base, original, { fromStep: "shape" }, { "idempotency-key": key })
                ),
                { concurrency: "unbounded" }
              )
              expect(answers.map((a) => a.status)).toEqual(Array(8).fill(201))
              const ids = new Set(answers.map((a) => a.body.data.executionId as string))
              expect(ids.size).toBe(1)
              ids.forEach((id) => replays.add(id))
              const other = yield* replayOf(base, original, { fromStep: "load" }, { "idempotency-key": key })
              expect(other.status).toBe(422)
            }
            const keyedRestart = yield* restartOf(base, original, { "idempotency-key": "restart-key" })
            expect(keyedRestart.status).toBe(409)
            // Without a key each is its own; the original lists every one (its row is never written).
            const unkeyed = yield* Effect.all(
              Array.from({ length: 8 }, () => replayOf(base, original, { fromStep: "finish" })),
              { concurrency: "unbounded" }
            )
            unkeyed.forEach((a) => replays.add(a.body.data.executionId))
            expect(replays.size).toBe(18)
            for (const id of replays) expect((yield* settled(base, "counted", id)).status).toBe("completed")
            const listed = (yield* recordOf(base, original)).body.data.replays.map((r: any) => r.executionId)
            expect(new Set(listed)).toEqual(replays)
          }))
      }),
    120_000
  )

  it.scopedLive(
    "a changed definition: a copied step the original never committed is 409; from the first step it runs",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        const original = yield* withService(url, [counted], (base) => completed(base, 6))
        yield* withService(url, [countedV2], (base) =>
          Effect.gen(function*() {
            const gone = yield* replayOf(base, original, { fromStep: "shape" })
            expect(gone.status).toBe(409)
            expect(gone.body.error).toContain("step audit is not among its committed steps")
            const fromStart = yield* replayOf(base, original, { fromStep: "load" })
            expect(fromStart.status).toBe(201)
            expect(yield* settled(base, "counted", fromStart.body.data.executionId)).toMatchObject({
              status: "completed",
              result: { audited: true, shaped: 12 }
            })
          }))
      }),
    60_000
  )

  it.scopedLive(
    twoInstances
      ? "two instances: a replay started on A, A shut down mid-step, is taken over and finished by B and visible there"
      : "a replay whose instance restarts mid-step goes on from its copied steps after the restart",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        let replay = ""
        let original = ""
        const onA = (base: string) =>
          Effect.gen(function*() {
            original = yield* completed(base, 8)
            flags.holdShape = true
            const answer = yield* replayOf(base, original, { fromStep: "shape" })
            expect(answer.status).toBe(201)
            replay = answer.body.data.executionId
            yield* startedStep(base, "counted", replay, "shape")
            yield* Effect.promise(async () => {
              while (ran(replay, "shape") === 0) await new Promise((r) => setTimeout(r, 10))
            })
            // A replay of it past what it committed: `shape` has no output in it yet.
            const tooFar = yield* replayOf(base, replay, { fromStep: "finish" })
            expect(tooFar.status).toBe(409)
            expect(tooFar.body.error).toContain("step shape has no committed output in it")
            // The step running here stays blocked until the shutdown interrupts it; where it runs next, it ends.
            flags.holdShape = false
          })
        const onB = (base: string) =>
          Effect.gen(function*() {
            const state = yield* settled(base, "counted", replay)
            expect(state).toMatchObject({ status: "completed", replayOf: { executionId: original, fromStep: "shape" } })
            expect(ran(replay, "load")).toBe(0)
            expect(ran(replay, "shape")).toBe(2)
            expect((yield* recordOf(base, original)).body.data.replays.map((r: any) => r.executionId)).toEqual([replay])
          })
        if (twoInstances) {
          // B runs throughout; A's scope ends first (its drain releases the replay for B to take).
          yield* withService(url, [counted], (b) => Effect.zipRight(withService(url, [counted], onA), onB(b)))
        } else {
          yield* withService(url, [counted], onA)
          yield* withService(url, [counted], onB)
        }
      }).pipe(Effect.ensuring(Effect.sync(() => (flags.holdShape = false)))),
    90_000
  )
}

describe("workflow replay and restart (SQLite, one instance with restarts)", () => {
  suite(Effect.map(tempDir, (dir) => `file:${join(dir, "service.db")}`), false)
})

describe.skipIf(!postgresAvailable)("workflow replay and restart (Postgres, two instances)", () => {
  suite(freshPostgresDatabase, true)
})

const SECRET = "replay-test-secret-at-least-32-characters"
const tokenOf = (sub: string) =>
  new SignJWT({ sub }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
    new TextEncoder().encode(SECRET)
  )
const auth = { production: false, jwt: { secret: Redacted.make(SECRET), defaultPrivate: false, publicRoutes: [] } }

layer(TestServerLive({ app: defineApp({ workflows: [counted] }), config: { auth } }), { excludeTestServices: true })(
  "replay under JWT",
  (it) => {
    it.effect("another owner's execution is 404; the replay is the caller's, and only the owner's replays are listed", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const ada = { authorization: `Bearer ${yield* Effect.promise(() => tokenOf("ada"))}` }
        const bob = { authorization: `Bearer ${yield* Effect.promise(() => tokenOf("bob"))}` }
        const started = yield* fetchJson(`${url}/workflows/counted/execute`, {
          ...json({ input: { n: 1 } }),
          headers: { "content-type": "application/json", ...ada }
        })
        const original = started.body.data.executionId as string
        expect((yield* replayOf(url, original, { fromStep: "shape" }, bob)).status).toBe(404)
        expect((yield* restartOf(url, original, bob)).status).toBe(404)
        const mine = yield* replayOf(url, original, { fromStep: "shape" }, ada)
        expect(mine.status).toBe(201)
        const replay = mine.body.data.executionId as string
        expect((yield* recordOf(url, replay, bob)).status).toBe(404)
        const seen = yield* recordOf(url, replay, ada)
        expect(seen.body.data.replayOf).toEqual({ executionId: original, fromStep: "shape" })
        expect((yield* recordOf(url, original, ada)).body.data.replays.map((r: any) => r.executionId)).toEqual([replay])
      }))
  }
)
