import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Schema } from "effect"
import { defineApp } from "../src/App.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { settled as settledState } from "./support/serviceOnDatabase.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * Issue #42 item 9 (settled 15): `/execute` of an execution parked by `andSleep` held the request until
 * it woke (up to 366 days; 2,000 held requests, +314 MB). Now it holds at most EXECUTE_WAIT_SECONDS
 * once the execution parks, then answers 202 with its state; `options.wait: "parked"` answers at once.
 */

const napper = workflow({
  id: "napper",
  name: "napper",
  purpose: "sleeps for the input's milliseconds",
  input: Schema.Struct({ ms: Schema.Number }),
  result: Schema.Struct({ woke: Schema.Boolean })
})
  .andThen({ id: "before", execute: ({ data }) => data })
  .andSleep({ id: "nap", duration: ({ data }) => Duration.millis(data.ms) })
  .andThen({ id: "after", execute: () => ({ woke: true }) })

/** One at a time; its step waits until `release` is called. */
let release = () => {}
const held = new Promise<void>((resolve) => {
  release = resolve
})
const single = workflow({
  id: "single",
  name: "single",
  purpose: "one at a time",
  input: Schema.Struct({}),
  result: Schema.Unknown,
  concurrency: { limit: 1 }
})
  .andThen({ id: "work", execute: () => held.then(() => ({ done: true })) })

const HOUR = 3_600_000

const serve = <A, E>(executeWaitMs: number, use: (url: string) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.gen(function*() {
    const defaults = resolveServerConfig({}, {})
    const server = TestServerLive({
      app: defineApp({ workflows: [napper, single] }),
      config: { workflows: { ...defaults.workflows, executeWaitMs } }
    })
    return yield* use(Context.get(yield* Layer.build(server), TestServer).url)
  }))

/** An execute that gives up after `ms` (a held request on the unfixed code), with how long it took. */
const execute = (url: string, body: unknown, ms = 20_000, workflowId = "napper") =>
  Effect.promise(async () => {
    const started = Date.now()
    try {
      const response = await fetch(`${url}/workflows/${workflowId}/execute`, {
        ...json(body),
        signal: AbortSignal.timeout(ms)
      })
      return { status: response.status, body: await response.json(), ms: Date.now() - started }
    } catch (error) {
      return { status: 0, body: String(error), ms: Date.now() - started }
    }
  })

describe("execute of an execution that parks", () => {
  it.scopedLive(
    "a sleeping execution's /execute answers 202 with its state after EXECUTE_WAIT_SECONDS (1 s here)",
    () =>
      serve(1_000, (url) =>
        Effect.gen(function*() {
          const answer = yield* execute(url, { input: { ms: HOUR } })
          expect(answer.status).toBe(202)
          expect(answer.ms).toBeGreaterThanOrEqual(900)
          expect(answer.body).toMatchObject({ success: true, data: { status: "running", endAt: null, result: null } })
          expect(answer.body.data.waitingUntil).toMatch(/^\d{4}-/)
          expect(answer.body.data.executionId).toEqual(expect.any(String))
        })),
    60_000
  )

  it.scopedLive(
    "options.wait \"parked\" answers 202 as soon as it parks; a short sleep within the wait still answers its result (200)",
    () =>
      serve(10 * 60_000, (url) =>
        Effect.gen(function*() {
          const parked = yield* execute(url, { input: { ms: HOUR }, options: { wait: "parked" } })
          expect(parked.status).toBe(202)
          expect(parked.body.data).toMatchObject({ status: "running", endAt: null, result: null })
          const short = yield* execute(url, { input: { ms: 200 } })
          expect(short.status).toBe(200)
          expect(short.body.data).toMatchObject({ status: "completed", result: { woke: true } })
        })),
    60_000
  )

  it.scopedLive(
    "an execution queued for a concurrency slot: 202 with waiting \"concurrency\" (wait \"parked\"), its result once it ran",
    () =>
      serve(10 * 60_000, (url) =>
        Effect.gen(function*() {
          const first = yield* fetchJson(`${url}/workflows/single/run`, json({ input: {} }))
          expect(first.body.data.waiting).toBeUndefined()
          const queued = yield* execute(url, { input: {}, options: { wait: "parked" } }, 20_000, "single")
          expect(queued.status).toBe(202)
          expect(queued.body.data).toMatchObject({
            status: "running",
            waiting: "concurrency",
            endAt: null,
            result: null
          })
          release()
          const after = yield* settledState(url, "single", queued.body.data.executionId)
          expect(after).toMatchObject({ status: "completed" })
        })),
    60_000
  )

  it.scopedLive(
    "300 executes of sleeping executions are all answered (none held)",
    () =>
      serve(1_000, (url) =>
        Effect.gen(function*() {
          const answers = yield* Effect.forEach(
            Array.from({ length: 300 }),
            () => execute(url, { input: { ms: HOUR } }),
            { concurrency: "unbounded" }
          )
          const statuses = new Map<number, number>()
          for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
          expect(Object.fromEntries(statuses)).toEqual({ 202: 300 })
        })),
    90_000
  )
})
