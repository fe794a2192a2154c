import { expect, expectTypeOf, layer } from "@effect/vitest"
import { Data, Effect, Schedule, Schema } from "effect"
import { it as plain } from "vitest"
import { defineAgent } from "../src/agents/Agent.js"
import { defineApp } from "../src/App.js"
import { StepTimeout } from "../src/index.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #31 item 3 (settled 10, 11, 14, 17): step retry and timeout policies; path and attempt.

class Flaky extends Data.TaggedError("Flaky")<{ readonly attempt: number; readonly message: string }> {}
class Fatal extends Data.TaggedError("Fatal")<{ readonly message: string }> {}

const N = Schema.Struct({ failures: Schema.Number, fatal: Schema.Boolean })
/** What each attempt saw, by execution id. */
const seen = new Map<string, Array<{ readonly attempt: number; readonly path: string }>>()
const see = (executionId: string, attempt: number, path: string) => {
  seen.set(executionId, [...(seen.get(executionId) ?? []), { attempt, path }])
}

const flaky = workflow({
  id: "flaky",
  name: "Flaky",
  purpose: "Fails `failures` times, then succeeds",
  input: N,
  result: Schema.Number
})
  .andThen({
    id: "call",
    execute: ({ attempt, data, executionId, path }) => {
      see(executionId, attempt, path)
      if (data.fatal) return Effect.fail(new Fatal({ message: "no point in trying again" }))
      return attempt <= data.failures
        ? Effect.fail(new Flaky({ attempt, message: `attempt ${attempt} failed` }))
        : Effect.succeed(attempt)
    },
    // After `execute`: TypeScript infers a step's types in the order of its fields, and `while` needs its E.
    retry: {
      schedule: Schedule.spaced("40 millis").pipe(Schedule.intersect(Schedule.recurs(4))),
      while: (error) => error._tag === "Flaky"
    }
  })

/** Attempt 1 outlives its timeout (and says whether its signal was aborted); attempt 2 answers at once unless `always`. */
const late = new Map<string, { aborted: boolean; settled: boolean }>()
const timed = workflow({
  id: "timed",
  name: "Timed",
  purpose: "A slow first attempt under a timeout",
  input: Schema.Struct({ always: Schema.Boolean, retry: Schema.Boolean }),
  result: Schema.String
})
  .andThen({
    id: "slow-call",
    timeout: "150 millis",
    execute: ({ attempt, data, executionId, signal }) => {
      if (attempt > 1 && !data.always) return Promise.resolve(`attempt ${attempt}`)
      if (attempt > 1 || !data.retry) {
        // A Promise that ignores nothing: it settles late, and its result must not be committed.
        return new Promise<string>((resolve) => {
          const record = { aborted: false, settled: false }
          late.set(`${executionId}:${attempt}`, record)
          signal.addEventListener("abort", () => (record.aborted = true))
          setTimeout(() => {
            record.settled = true
            resolve("too late")
          }, 600)
        })
      }
      return new Promise<string>((resolve) => setTimeout(() => resolve("too late"), 600))
    },
    // A Promise's rejection is `unknown`: a StepTimeout is told by its class.
    retry: { schedule: Schedule.recurs(1), while: (error) => error instanceof StepTimeout }
  })

const child = workflow({
  id: "path-child",
  name: "Child",
  purpose: "Records its step's path",
  input: Schema.Number,
  result: Schema.Number
})
  .andThen({
    id: "leaf",
    execute: ({ attempt, data, executionId, path }) => (see(executionId, attempt, path), data + 1)
  })

const paths = workflow({
  id: "paths",
  name: "Paths",
  purpose: "Paths of inner and child steps",
  input: Schema.Number,
  result: Schema.Number
})
  .andAll({
    id: "measure",
    steps: [
      { id: "upper", execute: ({ attempt, data, executionId, path }) => (see(executionId, attempt, path), data) },
      { id: "lower", execute: ({ data }) => data }
    ]
  })
  .andWorkflow({ id: "nested", workflow: child, input: ({ data }) => data[0] })

/** A tap under policies: retried, and once out of attempts (or timed out) logged, the data going on. */
const tapped = workflow({ id: "tapped", name: "Tapped", purpose: "A flaky tap", input: N, result: N })
  .andTap({
    id: "notify",
    execute: ({ attempt, data, executionId, path }) => {
      see(executionId, attempt, path)
      if (data.fatal) return Effect.never
      return attempt <= data.failures
        ? Effect.fail(new Flaky({ attempt, message: `tap attempt ${attempt} failed` }))
        : Effect.void
    },
    retry: { schedule: Schedule.recurs(2) },
    timeout: "100 millis"
  })

/** An inner step with a timeout: the andAll fails with its StepTimeout. */
const innerTimeout = workflow({
  id: "inner-timeout",
  name: "Inner timeout",
  purpose: "A slow inner step",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andAll({
    id: "both",
    steps: [
      { id: "quick", execute: ({ data }) => data },
      { id: "stuck", timeout: "100 millis", execute: ({ data }) => Effect.as(Effect.sleep("5 seconds"), data) }
    ]
  })

/** Fails once, then waits a 1.5 s back-off: over a second, so the execution parks like a sleep. */
const patient = workflow({
  id: "patient",
  name: "Patient",
  purpose: "A long back-off",
  input: Schema.Number,
  result: Schema.Number
})
  .andThen({
    id: "call",
    execute: (
      { attempt, data }
    ) => (attempt === 1 ? Effect.fail(new Flaky({ attempt, message: "busy" })) : Effect.succeed(data + attempt)),
    retry: { schedule: Schedule.spaced("1500 millis").pipe(Schedule.intersect(Schedule.recurs(2))) }
  })

const app = defineApp({ workflows: [flaky, timed, paths, child, tapped, innerTimeout, patient] })

const eventsOf = (url: string, workflowId: string, executionId: string) =>
  Effect.map(
    fetchJson(`${url}/workflows/executions?workflowId=${workflowId}&limit=100`),
    (response) => (response.body.data as Array<any>).find((e) => e.id === executionId).events as Array<any>
  )

layer(TestServerLive({ app }), { excludeTestServices: true })("step retry", (it) => {
  it.effect("a failing step is retried until it succeeds: a step-retry event per retry, attempt and path in its context", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/flaky/execute`,
        json({ input: { failures: 2, fatal: false }, options: { executionId: "r-ok" } })
      )
      expect(run.body.data).toMatchObject({ status: "completed", result: 3 })
      expect(seen.get("r-ok")).toEqual([{ attempt: 1, path: "call" }, { attempt: 2, path: "call" }, {
        attempt: 3,
        path: "call"
      }])
      const events = yield* eventsOf(url, "flaky", "r-ok")
      const retries = events.filter((e) => e.type === "step-retry")
      expect(retries).toHaveLength(2)
      for (const [i, retry] of retries.entries()) {
        expect(retry).toMatchObject({
          from: "call",
          attempt: i + 1,
          error: `attempt ${i + 1} failed`,
          errorDetail: { _tag: "Flaky", message: `attempt ${i + 1} failed`, fields: { attempt: i + 1 } },
          delayMs: 40
        })
        // Its time is the failure's; the next attempt is due `delayMs` after it.
        expect(Date.parse(retry.retryAt) - Date.parse(retry.startTime)).toBe(40)
      }
      // The step-retry events sit between the step's start and its completion.
      expect(events.map((e) => e.type)).toEqual([
        "workflow-start",
        "step-start",
        "step-retry",
        "step-retry",
        "step-complete",
        "workflow-complete"
      ])
    }))

  it.effect("a back-off over a second parks the execution like a sleep (no fiber; running with waitingUntil), woken at its due time", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const started = yield* fetchJson(
        `${url}/workflows/patient/run`,
        json({ input: 1, options: { executionId: "r-park" } })
      )
      expect(started.status).toBe(201)
      let state = (yield* fetchJson(`${url}/workflows/patient/executions/r-park/state`)).body.data
      for (
        const deadline = Date.now() + 20_000;
        state.waitingUntil === undefined && state.status === "running" && Date.now() < deadline;
      ) {
        yield* Effect.sleep("20 millis")
        state = (yield* fetchJson(`${url}/workflows/patient/executions/r-park/state`)).body.data
      }
      expect(state).toMatchObject({ status: "running" })
      // waitingUntil is shown only for a parked row (status 'sleeping', no owner): no fiber holds it.
      expect(state.waitingUntil).toBeDefined()
      for (const deadline = Date.now() + 20_000; state.status === "running" && Date.now() < deadline;) {
        yield* Effect.sleep("50 millis")
        state = (yield* fetchJson(`${url}/workflows/patient/executions/r-park/state`)).body.data
      }
      expect(state).toMatchObject({ status: "completed", result: 3 })
      const events = yield* eventsOf(url, "patient", "r-park")
      expect(events.map((e) => e.type)).toEqual([
        "workflow-start",
        "step-start",
        "step-retry",
        "step-sleep",
        "step-complete",
        "workflow-complete"
      ])
      const retry = events.find((e) => e.type === "step-retry")
      const sleep = events.find((e) => e.type === "step-sleep")
      expect(sleep.wakeAt).toBe(retry.retryAt)
      expect(Date.parse(events.at(-2).startTime)).toBeGreaterThanOrEqual(Date.parse(retry.retryAt))
    }))

  it.effect("`while` stops at an error it does not match: one attempt, the step fails with the error's detail", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/flaky/execute`,
        json({ input: { failures: 0, fatal: true }, options: { executionId: "r-fatal" } })
      )
      expect(run.status).toBe(500)
      expect(run.body.errorDetail).toMatchObject({ _tag: "Fatal", message: "no point in trying again" })
      expect(seen.get("r-fatal")).toHaveLength(1)
      expect((yield* eventsOf(url, "flaky", "r-fatal")).filter((e) => e.type === "step-retry")).toHaveLength(0)
    }))

  it.effect("an exhausted schedule fails the step as without a policy: error and errorDetail of the last attempt", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/flaky/execute`,
        json({ input: { failures: 99, fatal: false }, options: { executionId: "r-out" } })
      )
      expect(run.status).toBe(500)
      // recurs(4): five attempts in all.
      expect(seen.get("r-out")).toHaveLength(5)
      expect(run.body.errorDetail).toMatchObject({ _tag: "Flaky", fields: { attempt: 5 } })
      const state = (yield* fetchJson(`${url}/workflows/flaky/executions/r-out/state`)).body.data
      expect(state).toMatchObject({
        status: "error",
        error: "step call: attempt 5 failed",
        errorDetail: { _tag: "Flaky" }
      })
      expect((yield* eventsOf(url, "flaky", "r-out")).filter((e) => e.type === "step-retry").map((e) => e.attempt))
        .toEqual([1, 2, 3, 4])
    }))

  it.effect("a timeout fails the step with StepTimeout: the signal aborts and the late result is not committed", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/timed/execute`,
        json({ input: { always: true, retry: false }, options: { executionId: "t-1" } })
      )
      expect(run.status).toBe(500)
      expect(run.body.errorDetail).toMatchObject({
        _tag: "StepTimeout",
        fields: { stepId: "slow-call", timeoutMs: 150 }
      })
      expect(run.body.error).toContain("step slow-call: timed out after 150ms")
      // Both attempts timed out (the policy retries a StepTimeout once); their signals were aborted.
      expect(late.get("t-1:1")?.aborted).toBe(true)
      expect(late.get("t-1:2")?.aborted).toBe(true)
      const deadline = Date.now() + 10_000
      while (late.get("t-1:2")?.settled !== true && Date.now() < deadline) yield* Effect.sleep("50 millis")
      expect(late.get("t-1:2")?.settled).toBe(true)
      const events = yield* eventsOf(url, "timed", "t-1")
      expect(events.filter((e) => e.type === "step-complete")).toHaveLength(0)
      expect(events.at(-1).type).toBe("workflow-error")
      expect(events.find((e) => e.type === "step-retry")).toMatchObject({
        attempt: 1,
        errorDetail: { _tag: "StepTimeout" }
      })
    }))

  it.effect("a StepTimeout is retried when the policy says so: the next attempt's answer is the output", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/timed/execute`,
        json({ input: { always: false, retry: true }, options: { executionId: "t-2" } })
      )
      expect(run.body.data).toMatchObject({ status: "completed", result: "attempt 2" })
    }))

  it.effect("an andTap under policies is retried; out of attempts or timed out it is logged and the data goes on", () =>
    Effect.gen(function*() {
      const { logs, url } = yield* TestServer
      const ok = yield* fetchJson(
        `${url}/workflows/tapped/execute`,
        json({ input: { failures: 1, fatal: false }, options: { executionId: "tap-1" } })
      )
      expect(ok.body.data).toMatchObject({ status: "completed", result: { failures: 1, fatal: false } })
      expect(seen.get("tap-1")?.map((s) => s.attempt)).toEqual([1, 2])
      expect((yield* eventsOf(url, "tapped", "tap-1")).filter((e) => e.type === "step-retry")).toHaveLength(1)

      const out = yield* fetchJson(
        `${url}/workflows/tapped/execute`,
        json({ input: { failures: 9, fatal: false }, options: { executionId: "tap-2" } })
      )
      expect(out.body.data).toMatchObject({ status: "completed", result: { failures: 9, fatal: false } })
      expect(seen.get("tap-2")).toHaveLength(3)
      expect(logs.some((line) => line.includes("tap step notify failed: tap attempt 3 failed"))).toBe(true)

      const hung = yield* fetchJson(
        `${url}/workflows/tapped/execute`,
        json({ input: { failures: 0, fatal: true }, options: { executionId: "tap-3" } })
      )
      expect(hung.body.data).toMatchObject({ status: "completed", result: { failures: 0, fatal: true } })
      expect(seen.get("tap-3")).toHaveLength(3)
      expect(logs.some((line) => line.includes("tap step notify failed: timed out after 100ms"))).toBe(true)
    }))

  it.effect("an inner step of andAll takes a timeout: the step fails with its StepTimeout", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const before = Date.now()
      const run = yield* fetchJson(`${url}/workflows/inner-timeout/execute`, json({ input: 1 }))
      expect(run.status).toBe(500)
      expect(run.body.error).toContain("step stuck: timed out after 100ms")
      expect(run.body.errorDetail).toMatchObject({ _tag: "StepTimeout", fields: { stepId: "stuck", timeoutMs: 100 } })
      expect(Date.now() - before).toBeLessThan(4000)
    }))

  it.effect("inner and child steps see their path: outer/inner, parent/step", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/paths/execute`,
        json({ input: 4, options: { executionId: "p-1" } })
      )
      expect(run.body.data).toMatchObject({ status: "completed", result: 5 })
      expect(seen.get("p-1")).toEqual([{ attempt: 1, path: "measure/upper" }, { attempt: 1, path: "nested/leaf" }])
    }))

  it.effect("each attempt has its own workflow.step span with step.path and step.attempt", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      yield* fetchJson(
        `${url}/workflows/flaky/execute`,
        json({ input: { failures: 1, fatal: false }, options: { executionId: "r-span" } })
      )
      const deadline = Date.now() + 20_000
      let attempts: Array<number> = []
      while (attempts.length < 2 && Date.now() < deadline) {
        const traces =
          (yield* fetchJson(`${url}/observability/traces?entityType=workflow&entityId=flaky&limit=50`)).body.data.traces
        attempts = []
        for (const summary of traces) {
          const trace = (yield* fetchJson(`${url}/observability/traces/${summary.traceId}`)).body.data
          for (const span of trace.spans) {
            if (span.name === "workflow.step" && span.attributes["execution.id"] === "r-span") {
              expect(span.attributes["step.path"]).toBe("call")
              attempts.push(span.attributes["step.attempt"])
            }
          }
        }
        if (attempts.length < 2) yield* Effect.sleep("100 millis")
      }
      expect(attempts.sort()).toEqual([1, 2])
      const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text()))
      expect(metrics).toMatch(/^workflow_step_retries_total\{[^}]*workflow_id="flaky"[^}]*\} \d+$/m)
    }))
})

const parking = workflow({
  id: "parks",
  name: "Parks",
  purpose: "Suspends",
  input: Schema.Number,
  result: Schema.Number,
  resumeSchema: Schema.Struct({ ok: Schema.Boolean })
}).andThen({
  id: "ask",
  execute: ({ data, resumeData, suspend }) => (resumeData === undefined ? suspend("ask") : data)
})

const quiet = workflow({
  id: "quiet",
  name: "Quiet",
  purpose: "Never parks",
  input: Schema.Number,
  result: Schema.Number
})
  .andThen({ id: "inc", execute: ({ data }) => data + 1 })

const start = () =>
  workflow({ id: "outer", name: "Outer", purpose: "Runs a child", input: Schema.Number, result: Schema.Number })

plain("timeout is refused at definition time on a step that can park (a child that suspends or sleeps)", () => {
  expect(() => start().andWorkflow({ id: "child", workflow: parking, timeout: "1 second" })).toThrow(
    "Workflow outer, step child: timeout is not allowed on a child workflow that can park (parks sleeps or suspends)"
  )
  // A child with a sleep step.
  const sleeper = workflow({
    id: "sleeper",
    name: "Sleeper",
    purpose: "Naps",
    input: Schema.Number,
    result: Schema.Number
  })
    .andSleep({ id: "nap", duration: "1 second" })
  expect(() => start().andWorkflow({ id: "child", workflow: sleeper, timeout: "1 second" })).toThrow(
    /can park \(sleeper sleeps or suspends\)/
  )
  // One that cannot park takes it, and a bad timeout is refused.
  expect(() => start().andWorkflow({ id: "child", workflow: quiet, timeout: "1 second" })).not.toThrow()
  expect(() => start().andThen({ id: "x", timeout: 0, execute: () => 1 })).toThrow(
    "timeout must be a positive, finite duration"
  )
  expect(() => start().andThen({ id: "x", timeout: "30 days", execute: () => 1 })).toThrow(/timeout is over 7d/)
  expect(() => start().andAll({ id: "all", steps: [{ id: "x", timeout: -1, execute: () => 1 }] })).toThrow(
    "step x: timeout must be a positive"
  )
})

plain("`while` sees the step's E (and StepTimeout); a tag it cannot have does not compile", () => {
  start().andThen({
    id: "typed",
    execute: (
      { data }
    ) => (data > 1
      ? Effect.fail(new Flaky({ attempt: 1, message: "" }))
      : data < 0
      ? Effect.fail(new Fatal({ message: "" }))
      : Effect.succeed(data)),
    retry: {
      schedule: Schedule.recurs(2),
      while: (error) => {
        expectTypeOf(error).toEqualTypeOf<Flaky | Fatal | StepTimeout>()
        // @ts-expect-error "Nope" is no tag of Flaky | Fatal | StepTimeout
        return error._tag === "Nope"
      }
    }
  })
  start().andWhen({
    id: "when",
    condition: ({ data }) => (data > 0 ? Effect.succeed(true) : Effect.fail(new Fatal({ message: "" }))),
    step: { id: "inner", execute: () => Effect.fail(new Flaky({ attempt: 1, message: "" })) },
    retry: {
      schedule: Schedule.recurs(1),
      while: (error) => {
        expectTypeOf(error).toEqualTypeOf<Flaky | Fatal | StepTimeout>()
        return error._tag !== "StepTimeout"
      }
    }
  })
  // A plain value fails with nothing typed: only StepTimeout.
  start().andThen({
    id: "plain",
    execute: ({ data }) => data,
    retry: { schedule: Schedule.recurs(1), while: (error) => error._tag === "StepTimeout" }
  })
  // A schedule that reads its input must take the step's errors.
  start().andThen({
    id: "schedule-input",
    execute: () => Effect.fail(new Flaky({ attempt: 1, message: "" })),
    retry: { schedule: Schedule.recurWhile((error: Flaky | StepTimeout) => error._tag === "Flaky") }
  })
  start().andThen({
    id: "schedule-wrong",
    execute: () => Effect.fail(new Flaky({ attempt: 1, message: "" })),
    // @ts-expect-error the schedule takes Fatal only, the step fails with Flaky
    retry: { schedule: Schedule.recurWhile((error: Fatal) => error._tag === "Fatal") }
  })
  // andAgent: the call's tagged errors, and the prompt's; andWorkflow: the child's are not typed.
  start().andAgent({
    id: "ask",
    agent: defineAgent({ id: "helper", name: "Helper", purpose: "Helps", instructions: "Be brief." }),
    prompt: ({ data }) => (data > 0 ? Effect.succeed("hi") : Effect.fail(new Fatal({ message: "" }))),
    retry: {
      schedule: Schedule.recurs(1),
      while: (error) => {
        expectTypeOf(error._tag).toEqualTypeOf<string>()
        // @ts-expect-error a call's error has no `attempt`
        return error.attempt === 1
      }
    }
  })
  start().andWorkflow({
    id: "child",
    workflow: quiet,
    retry: {
      schedule: Schedule.recurs(1),
      while: (error) => {
        expectTypeOf(error).toEqualTypeOf<unknown>()
        return error instanceof StepTimeout
      }
    }
  })
  expect(StepTimeout).toBeDefined()
})
