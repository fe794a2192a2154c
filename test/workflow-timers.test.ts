import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"
import {
  eventsOf,
  eventually,
  expectWellFormed,
  parked,
  post,
  rowOf,
  runs,
  stateOf,
  timerRaces,
  timersApp
} from "./support/timers.js"

/** Durable timers (issue #31) on SQLite, in process: parking, waking, bounds, cancel, suspend and resume of sleepers. */

layer(TestServerLive({ app: timersApp }), { excludeTestServices: true })("durable timers on SQLite", (it) => {
  it.effect(
    "a sleep parks the execution (running, waitingUntil, no owner, no fiber) and wakes it at wakeAt",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const started = yield* post(`${url}/workflows/nap/run`, {
          input: { ms: 3000 },
          options: { executionId: "parks" }
        })
        expect(started.status).toBe(201)
        const state = yield* parked(url, "nap", "parks")
        expect(state.status).toBe("running")
        const wakeAt = Date.parse(state.waitingUntil)
        expect(wakeAt).toBeGreaterThan(Date.now())
        // Parked: the store's row holds no owner (no claim) in a state the orphan claim does not match.
        const row = yield* rowOf("parks")
        expect(row).toMatchObject({ status: "sleeping", owner: null, wake_at: state.waitingUntil })
        // The listing shows it as running with waitingUntil, and the running filter includes it.
        const listed = yield* fetchJson(`${url}/workflows/executions?status=running&workflowId=nap`)
        const entry = listed.body.data.find((e: any) => e.id === "parks")
        expect(entry).toMatchObject({ status: "running", waitingUntil: state.waitingUntil })
        const events = yield* eventsOf(url, "parks")
        expect(events.map((e) => `${e.type}:${e.from}`)).toEqual([
          "workflow-start:Nap",
          "step-start:before",
          "step-complete:before",
          "step-start:nap",
          "step-sleep:nap"
        ])

        const done = yield* eventually(
          stateOf(url, "nap", "parks"),
          (s) => s.status === "completed",
          "woken and completed"
        )
        expect(done.waitingUntil).toBeUndefined()
        expect(done.result.after).toBeGreaterThanOrEqual(wakeAt)
        const all = yield* eventsOf(url, "parks")
        expectWellFormed(all, "workflow-complete")
        expect(all.map((e) => `${e.type}:${e.from}`).slice(5)).toEqual([
          "step-complete:nap",
          "step-start:after",
          "step-complete:after",
          "workflow-complete:Nap"
        ])
        expect((yield* rowOf("parks")).wake_at).toBeNull()
      }),
    60_000
  )

  it.effect("execute (synchronous) answers once the sleeper woke and completed", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const answer = yield* post(`${url}/workflows/nap/execute`, { input: { ms: 300 } })
      expect(answer.body.data).toMatchObject({ status: "completed", result: { ms: 300 } })
    }), 30_000)

  it.effect("a wake time in the past continues at once, with no step-sleep", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const at = new Date(Date.now() - 60_000).toISOString()
      const answer = yield* post(`${url}/workflows/until/execute`, { input: { at }, options: { executionId: "past" } })
      expect(answer.body.data).toMatchObject({ status: "completed", result: { at } })
      const events = yield* eventsOf(url, "past")
      expect(events.some((e) => e.type === "step-sleep")).toBe(false)
    }), 30_000)

  it.effect(
    "bounds: a duration over 366 days, a non-duration and an invalid date fail the step with a message",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const long = yield* post(`${url}/workflows/nap-for/execute`, { input: { duration: "400 days" } })
        expect(long.body.success).toBe(false)
        expect(long.body.error).toContain("step nap: duration 400d is over the 366d a sleep may last")
        const nonsense = yield* post(`${url}/workflows/nap-for/execute`, { input: { duration: "soon" } })
        expect(nonsense.body.error).toContain(`step nap: duration "soon" is not a duration`)
        const invalid = yield* post(`${url}/workflows/until/execute`, { input: { at: "not a date" } })
        expect(invalid.body.error).toContain(`step until: date "not a date" is not a valid date`)
        const far = yield* post(`${url}/workflows/until/execute`, { input: { at: "2999-01-01T00:00:00.000Z" } })
        expect(far.body.error).toContain("is more than the 366d a sleep may last ahead")
      }),
    30_000
  )

  it.effect(
    "a sleep inside a child workflow parks the execution at its path; on wake the child's earlier steps and onStart do not run again",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* post(`${url}/workflows/sleepy-parent/run`, {
          input: { ms: 1500 },
          options: { executionId: "child-sleeps" }
        })
        const state = yield* parked(url, "sleepy-parent", "child-sleeps")
        expect(yield* rowOf("child-sleeps")).toMatchObject({ status: "sleeping", owner: null })
        const sleepEvent = (yield* eventsOf(url, "child-sleeps")).find((e) => e.type === "step-sleep")
        expect(sleepEvent).toMatchObject({ from: "nap", path: "child/nap", wakeAt: state.waitingUntil })
        const done = yield* eventually(stateOf(url, "sleepy-parent", "child-sleeps"), (s) =>
          s.status === "completed", "woken and completed")
        expect(done.result.after).toBeGreaterThanOrEqual(Date.parse(state.waitingUntil))
        expect(runs.get("child-sleeps:prepare")).toBe(1)
        expect(runs.get("child-sleeps:onStart")).toBe(1)
        expectWellFormed(yield* eventsOf(url, "child-sleeps"), "workflow-complete")
        const passed = yield* post(`${url}/workflows/sleepy-parent/execute`, { input: { ms: 0 } })
        expect(passed.body.data).toMatchObject({ status: "completed", result: { ms: 0 } })
      }),
    30_000
  )

  it.effect("cancel works on a sleeper: cancelled, never woken", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* post(`${url}/workflows/nap/run`, { input: { ms: 2000 }, options: { executionId: "cancel-sleeper" } })
      const asleep = yield* parked(url, "nap", "cancel-sleeper")
      const cancelled = yield* post(`${url}/workflows/nap/executions/cancel-sleeper/cancel`, { reason: "no nap" })
      expect(cancelled.status).toBe(200)
      // Past its wake time: no wake ran it.
      yield* Effect.sleep(Math.max(0, Date.parse(asleep.waitingUntil) - Date.now() + 700))
      const state = yield* stateOf(url, "nap", "cancel-sleeper")
      expect(state.status).toBe("cancelled")
      expect(state.waitingUntil).toBeUndefined()
      expectWellFormed(yield* eventsOf(url, "cancel-sleeper"), "workflow-cancelled")
    }), 30_000)

  it.effect(
    "suspend works on a sleeper; resumed before wakeAt it parks again until the same wakeAt",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* post(`${url}/workflows/nap/run`, { input: { ms: 4000 }, options: { executionId: "suspend-early" } })
        const first = yield* parked(url, "nap", "suspend-early")
        const suspended = yield* post(`${url}/workflows/nap/executions/suspend-early/suspend`, { reason: "hold" })
        expect(suspended.status).toBe(200)
        const held = yield* stateOf(url, "nap", "suspend-early")
        expect(held).toMatchObject({ status: "suspended", suspension: { stepId: "nap" } })
        expect(held.waitingUntil).toBeUndefined()
        const resumed = yield* Effect.fork(post(`${url}/workflows/nap/executions/suspend-early/resume`, {}))
        const again = yield* parked(url, "nap", "suspend-early")
        expect(again.waitingUntil).toBe(first.waitingUntil)
        const done = yield* eventually(
          stateOf(url, "nap", "suspend-early"),
          (s) => s.status === "completed",
          "completed"
        )
        expect(done.result.after).toBeGreaterThanOrEqual(Date.parse(first.waitingUntil))
        yield* resumed.await
        const events = yield* eventsOf(url, "suspend-early")
        expectWellFormed(events, "workflow-complete")
        expect(
          events.filter((e) => e.type === "step-sleep").map((e) => e.type)
        ).toHaveLength(2)
        expect(events.filter((e) => e.type === "step-complete" && e.from === "nap")).toHaveLength(1)
      }),
    30_000
  )

  it.effect("resumed after wakeAt, a suspended sleeper continues at once", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* post(`${url}/workflows/nap/run`, { input: { ms: 1500 }, options: { executionId: "suspend-late" } })
      const first = yield* parked(url, "nap", "suspend-late")
      expect((yield* post(`${url}/workflows/nap/executions/suspend-late/suspend`, { reason: "hold" })).status).toBe(200)
      yield* Effect.sleep(Math.max(0, Date.parse(first.waitingUntil) - Date.now() + 400))
      expect((yield* stateOf(url, "nap", "suspend-late")).status).toBe("suspended")
      const resumed = yield* post(`${url}/workflows/nap/executions/suspend-late/resume`, {})
      expect(resumed.body.data).toMatchObject({ status: "completed", result: { ms: 1500 } })
      expect(resumed.body.data.result.after).toBeGreaterThanOrEqual(Date.parse(first.waitingUntil))
      const events = yield* eventsOf(url, "suspend-late")
      expect(events.filter((e) => e.type === "step-sleep")).toHaveLength(1)
    }), 30_000)

  it.effect(
    "resumed at an earlier step, the sleep is entered anew: its time evaluated again, not the committed one",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* post(`${url}/workflows/nap/run`, { input: { ms: 1500 }, options: { executionId: "resume-earlier" } })
        const first = yield* parked(url, "nap", "resume-earlier")
        expect((yield* post(`${url}/workflows/nap/executions/resume-earlier/suspend`, { reason: "hold" })).status).toBe(
          200
        )
        yield* Effect.sleep(Math.max(0, Date.parse(first.waitingUntil) - Date.now() + 300))
        yield* Effect.fork(
          post(`${url}/workflows/nap/executions/resume-earlier/resume`, { options: { stepId: "before" } })
        )
        const again = yield* parked(url, "nap", "resume-earlier")
        expect(Date.parse(again.waitingUntil)).toBeGreaterThan(Date.parse(first.waitingUntil))
        yield* eventually(stateOf(url, "nap", "resume-earlier"), (s) => s.status === "completed", "completed")
        const events = yield* eventsOf(url, "resume-earlier")
        expect(events.filter((e) => e.type === "step-sleep")).toHaveLength(2)
      }),
    30_000
  )

  it.effect(
    "observability: each wake is a root span `workflow.wake <id>` found by the entity filter; metrics parked and lateness (the link: workflow-timers-otel)",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* post(`${url}/workflows/until/run`, {
          input: { at: new Date(Date.now() + 2000).toISOString() },
          options: { executionId: "traced" }
        })
        yield* eventually(stateOf(url, "until", "traced"), (s) => s.status === "completed", "traced completed")
        const wakes = yield* eventually(
          Effect.map(fetchJson(`${url}/observability/traces?entityType=workflow&entityId=until&limit=500`), (r) =>
            (r.body.data.traces as Array<any>).filter((t) => t.name === "workflow.wake until")),
          (found) =>
            found.length > 0,
          "a workflow.wake trace"
        )
        const trace = yield* fetchJson(`${url}/observability/traces/${wakes[0].traceId}`)
        const spans = trace.body.data.spans as Array<any>
        const root = spans.find((span) => span.name === "workflow.wake until")
        expect(root.parentSpanId ?? null).toBeNull()
        expect(root.attributes).toMatchObject({
          "entity.type": "workflow",
          "entity.id": "until",
          "execution.id": "traced"
        })
        expect(spans.some((span) => span.name === "workflow.step" && span.attributes["step.id"] === "until")).toBe(true)
        const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text()))
        expect(metrics).toMatch(/^workflow_timers_parked\{[^}]*\} \d+$/m)
        expect(metrics).toMatch(/^workflow_timer_lateness_count\{[^}]*\} [1-9]\d*$/m)
      }),
    30_000
  )

  timerRaces("sqlite")(it)
})
