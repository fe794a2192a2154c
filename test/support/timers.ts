import { SqlClient } from "@effect/sql"
import { expect, type Vitest } from "@effect/vitest"
import { Context, Duration, Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { WAKE_LEAD_MS } from "../../src/workflows/steps/Sleep.js"
import { fetchJson, json, TestServer } from "./TestServer.js"

/** Workflows with durable timers (issue #31), and checks shared by the SQLite and Postgres tests. */

/** Sleeps `ms`, then answers when it woke. */
export const nap = workflow({
  id: "nap",
  name: "Nap",
  purpose: "Sleeps a given number of milliseconds between two steps",
  input: Schema.Struct({ ms: Schema.Number }),
  result: Schema.Struct({ ms: Schema.Number, after: Schema.Number })
})
  .andThen({ id: "before", execute: ({ data }) => ({ ms: data.ms }) })
  .andSleep({ id: "nap", duration: ({ data }) => Duration.millis(data.ms) })
  .andThen({ id: "after", execute: ({ data }) => ({ ms: data.ms, after: Date.now() }) })

/** Sleeps until the input's date. */
export const until = workflow({
  id: "until",
  name: "Until",
  purpose: "Sleeps until a given date",
  input: Schema.Struct({ at: Schema.String }),
  result: Schema.Struct({ at: Schema.String })
}).andSleepUntil({ id: "until", date: ({ data }) => data.at })

/** Sleeps for a duration given as text (the bound is tested with it). */
export const napFor = workflow({
  id: "nap-for",
  name: "Nap for",
  purpose: "Sleeps for a duration given as text",
  input: Schema.Struct({ duration: Schema.String }),
  result: Schema.Struct({ duration: Schema.String })
}).andSleep({ id: "nap", duration: ({ data }) => data.duration as Duration.DurationInput })

/** How often each execution ran a step, and its onStart hook, by `<executionId>:<what>`. */
export const runs = new Map<string, number>()
const count = (key: string) => runs.set(key, (runs.get(key) ?? 0) + 1)

/** A child workflow that prepares, sleeps, then answers when it woke. */
const sleepyChild = workflow({
  id: "sleepy-child",
  name: "Sleepy child",
  purpose: "Prepares, sleeps a given number of milliseconds, answers",
  input: Schema.Struct({ ms: Schema.Number }),
  result: Schema.Struct({ ms: Schema.Number, after: Schema.Number })
})
  .andThen({ id: "prepare", execute: ({ data, executionId }) => (count(`${executionId}:prepare`), { ms: data.ms }) })
  .andSleep({ id: "nap", duration: ({ data }) => Duration.millis(data.ms) })
  .andThen({ id: "after", execute: ({ data }) => ({ ms: data.ms, after: Date.now() }) })

/** A parent whose child sleeps: the whole execution parks at the child's sleep. */
export const sleepyParent = workflow({
  id: "sleepy-parent",
  name: "Sleepy parent",
  purpose: "Runs a child workflow that sleeps",
  input: Schema.Struct({ ms: Schema.Number }),
  result: Schema.Struct({ ms: Schema.Number, after: Schema.Number }),
  onStart: ({ executionId }) => Effect.sync(() => count(`${executionId}:onStart`))
}).andWorkflow({ id: "child", workflow: sleepyChild })

export const timersApp = defineApp({ workflows: [nap, until, napFor, sleepyParent] })

type Answer = { readonly status: number; readonly body: any }
export const post = (url: string, body: unknown = {}) => fetchJson(url, json(body)) as Effect.Effect<Answer>

export const stateOf = (url: string, workflowId: string, id: string) =>
  Effect.map(fetchJson(`${url}/workflows/${workflowId}/executions/${id}/state`), (r) => r.body.data)

/**
 * The execution's events from its record. The races read records of concurrent trials: past
 * `workflows.recordReadsPerOwner` in flight (one anonymous caller) the answer is 429, tried again after
 * 100 ms (the trials' reads are short; Retry-After says 1 s).
 */
export const eventsOf = (url: string, id: string): Effect.Effect<Array<any>> =>
  Effect.flatMap(
    fetchJson(`${url}/workflows/executions/${encodeURIComponent(id)}`),
    (r) =>
      r.status === 429
        ? Effect.zipRight(Effect.sleep("100 millis"), eventsOf(url, id))
        : Effect.succeed(r.body.data.events)
  )

/** Polls `read` until `check` holds (generous deadline). */
export const eventually = <A>(
  read: Effect.Effect<A>,
  check: (value: A) => boolean,
  what: string,
  deadlineMs = 30_000
) =>
  Effect.gen(function*() {
    const until = Date.now() + deadlineMs
    for (;;) {
      const value = yield* read
      if (check(value)) return value
      if (Date.now() > until) return yield* Effect.die(new Error(`${what}: still ${JSON.stringify(value)}`))
      yield* Effect.sleep("20 millis")
    }
  })

/** The row as the store holds it (status 'sleeping' is the API's running). */
export const rowOf = (id: string) =>
  Effect.gen(function*() {
    const { services } = yield* TestServer
    const sql = Context.get(services, SqlClient.SqlClient)
    const rows = yield* sql<{ status: string; owner: string | null; wake_at: string | null; version: number }>`
      SELECT status, owner, wake_at, version FROM workflow_executions WHERE id = ${id}`.pipe(Effect.orDie)
    return rows[0]
  })

export const parked = (url: string, workflowId: string, id: string) =>
  eventually(
    stateOf(url, workflowId, id),
    (s) => s.status === "running" && s.waitingUntil !== undefined,
    `${id} parked`
  )

const FINAL = ["workflow-complete", "workflow-error", "workflow-cancelled"]

/** Numbered 1..n, one final event, the last; `final` is its type. */
export const expectWellFormed = (events: ReadonlyArray<any>, final: string) => {
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1))
  expect(events.at(-1)!.type).toBe(final)
  expect(events.filter((e) => FINAL.includes(e.type))).toHaveLength(1)
}

const TRIALS = 200
const BATCH = 25
/** Long enough for a batch of executions to park (and the test to read their wake time) before it comes, on a loaded machine. */
const NAP_MS = 1500

const inBatches = <R>(count: number, trial: (i: number) => Effect.Effect<void, never, R>) =>
  Effect.forEach(
    Array.from({ length: Math.ceil(count / BATCH) }, (_, b) => b),
    (b) =>
      Effect.forEach(Array.from({ length: Math.min(BATCH, count - b * BATCH) }, (_, i) => b * BATCH + i), trial, {
        concurrency: BATCH,
        discard: true
      }),
    {
      discard: true
    }
  )

/** Parks a fresh nap of `ms` and answers its id and wake time (ms). */
const parkOne = (url: string, id: string, ms: number) =>
  Effect.gen(function*() {
    const started = yield* post(`${url}/workflows/nap/run`, { input: { ms }, options: { executionId: id } })
    expect(started.status).toBe(201)
    const events = yield* eventually(eventsOf(url, id), (events) =>
      events.some((e) => e.type === "step-sleep"), `${id} entered its sleep`)
    return Date.parse(
      events.find((e) =>
        e.type === "step-sleep"
      ).wakeAt
    )
  })

/** Waits until about `at` (ms), give or take a few milliseconds at random: the race's other side is the timer. */
const aroundTime = (at: number, from = -15, span = 40) =>
  Effect.suspend(() =>
    Effect.sleep(Duration.millis(Math.max(0, at - Date.now() + from + Math.floor(Math.random() * span))))
  )

/** Wake against cancel and wake against suspend, `TRIALS` each: one winner, consistent state, nothing after a final event. */
export const timerRaces = (store: string) => (it: Vitest.MethodsNonLive<TestServer, true>) => {
  it.effect(`${store}: wake vs cancel, ${TRIALS} trials`, () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const outcomes = { cancelled: 0, completed: 0, cancelledAsleep: 0, cancelledAwake: 0 }
      yield* inBatches(TRIALS, (i) =>
        Effect.gen(function*() {
          const id = `race-cancel-${store}-${i}`
          const wakeAt = yield* parkOne(url, id, NAP_MS)
          // The timer takes a sleeper WAKE_LEAD_MS before its time: that is the moment the cancel races.
          yield* aroundTime(wakeAt - WAKE_LEAD_MS, -15, 80)
          const cancel = yield* post(`${url}/workflows/nap/executions/${id}/cancel`, { reason: "race" })
          expect([200, 400]).toContain(cancel.status)
          const state = yield* eventually(stateOf(url, "nap", id), (s) => s.status !== "running", `${id} ends`)
          // Give a late wake every chance to write after the end.
          yield* Effect.sleep("150 millis")
          const events = yield* eventsOf(url, id)
          if (cancel.status === 200) {
            outcomes.cancelled++
            expect(state.status).toBe("cancelled")
            expectWellFormed(events, "workflow-cancelled")
            // Which side the row lock let through first: the cancel of a sleeper, or the wake.
            if (events.some((e) => e.type === "step-complete" && e.from === "nap")) outcomes.cancelledAwake++
            else outcomes.cancelledAsleep++
          } else {
            outcomes.completed++
            expect(state.status).toBe("completed")
            expectWellFormed(events, "workflow-complete")
          }
          expect(events.filter((e) => e.type === "step-complete" && e.from === "nap").length).toBeLessThanOrEqual(1)
          const row = yield* rowOf(id)
          expect(row.wake_at === null || row.status === "cancelled").toBe(true)
        }))
      expect(outcomes.cancelled + outcomes.completed).toBe(TRIALS)
      // Both sides won some trials: the cancel of a sleeper, and the wake (the cancel then found it running or ended).
      expect(outcomes.cancelledAsleep).toBeGreaterThan(0)
      expect(outcomes.cancelledAwake + outcomes.completed).toBeGreaterThan(0)
      console.log(`${store}: wake vs cancel: ${JSON.stringify(outcomes)}`)
    }), 600_000)

  it.effect(`${store}: wake vs suspend, ${TRIALS} trials`, () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const outcomes = { suspendedAsleep: 0, suspendedAwake: 0, refused: 0 }
      yield* inBatches(TRIALS, (i) =>
        Effect.gen(function*() {
          const id = `race-suspend-${store}-${i}`
          const wakeAt = yield* parkOne(url, id, NAP_MS)
          // A suspend reads the row before its conditional write: sent a little earlier than a cancel.
          yield* aroundTime(wakeAt - WAKE_LEAD_MS, -40, 120)
          const suspend = yield* post(`${url}/workflows/nap/executions/${id}/suspend`, { reason: "race" })
          expect([200, 400]).toContain(suspend.status)
          if (suspend.status === 200) {
            const state = yield* stateOf(url, "nap", id)
            expect(state.status).toBe("suspended")
            // Suspended, it stays so: no wake runs it.
            yield* Effect.sleep("150 millis")
            expect((yield* stateOf(url, "nap", id)).status).toBe("suspended")
            const before = yield* eventsOf(url, id)
            expect(before.at(-1).type).toBe("workflow-suspended")
            if (before.some((e) => e.type === "step-complete" && e.from === "nap")) outcomes.suspendedAwake++
            else outcomes.suspendedAsleep++
            const resumed = yield* post(`${url}/workflows/nap/executions/${id}/resume`, {})
            expect(resumed.status).toBe(200)
          } else {
            outcomes.refused++
            if (outcomes.refused === 1) {
              console.log(
                `${store}: refused suspend: ${JSON.stringify(suspend.body)} at ${Date.now() - wakeAt} ms from wakeAt`
              )
            }
          }
          const state = yield* eventually(stateOf(url, "nap", id), (s) => s.status === "completed", `${id} completes`)
          expect(state.result.ms).toBe(NAP_MS)
          yield* Effect.sleep("100 millis")
          const events = yield* eventsOf(url, id)
          expectWellFormed(events, "workflow-complete")
          // The sleep completes once per run of it after the resume (at most once in all).
          expect(events.filter((e) => e.type === "step-complete" && e.from === "nap")).toHaveLength(1)
          // The continuation ran no earlier than the committed wake time.
          const done = events.find((e) => e.type === "step-complete" && e.from === "nap")
          expect(Date.parse(done.startTime)).toBeGreaterThanOrEqual(wakeAt)
        }))
      console.log(`${store}: wake vs suspend: ${JSON.stringify(outcomes)}`)
      expect(outcomes.suspendedAsleep).toBeGreaterThan(0)
      expect(outcomes.suspendedAwake + outcomes.refused).toBeGreaterThan(0)
    }), 600_000)
}
