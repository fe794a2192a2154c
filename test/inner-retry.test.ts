import { describe, expect, expectTypeOf, it, layer } from "@effect/vitest"
import { Data, Effect, Schedule, Schema } from "effect"
import { join } from "node:path"
import { it as plain } from "vitest"
import { defineApp } from "../src/App.js"
import { StepTimeout } from "../src/index.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { settled, withService } from "./support/serviceOnDatabase.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #31 item 3 on inner steps: `retry` and `timeout` on the steps of andAll/andRace, andWhen's
// step, andBranch's branches, andForEach's step (per item) and the loops' step (per iteration). Each
// retry is committed as `<path>#retry` with a step-retry event carrying `path`; a takeover goes on
// from it.

class Flaky extends Data.TaggedError("Flaky")<{ readonly attempt: number; readonly message: string }> {}
class Fatal extends Data.TaggedError("Fatal")<{ readonly message: string }> {}

/** The attempts each inner step made, by `<executionId>:<path>`: the attempt its context had, when, and under which service. */
const attempts = new Map<string, Array<{ readonly attempt: number; readonly at: number; readonly service: number }>>()
let service = 1
const attempted = (executionId: string, path: string, attempt: number) => {
  const key = `${executionId}:${path}`
  attempts.set(key, [...(attempts.get(key) ?? []), { attempt, at: Date.now(), service }])
}
const attemptsAt = (executionId: string, path: string) =>
  (attempts.get(`${executionId}:${path}`) ?? []).map((a) => a.attempt)

/** Fails with Flaky on its first `failures` attempts. */
const flakyUntil = <A>(failures: number, attempt: number, value: A) =>
  attempt <= failures
    ? Effect.fail(new Flaky({ attempt, message: `attempt ${attempt} failed` }))
    : Effect.succeed(value)

const quick = Schedule.spaced("20 millis").pipe(Schedule.intersect(Schedule.recurs(4)))

const inner = workflow({
  id: "inner-flaky",
  name: "Inner flaky",
  purpose: "Inner steps that fail twice",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andAll({
    id: "all",
    steps: [
      {
        id: "upper",
        execute: (
          { attempt, data, executionId, path }
        ) => (attempted(executionId, path, attempt), flakyUntil(2, attempt, data + 1)),
        retry: { schedule: quick },
        timeout: "5 seconds"
      },
      { id: "lower", execute: ({ data }) => data - 1 }
    ]
  })
  .andForEach({
    id: "each",
    items: ({ data }) => data,
    step: {
      id: "item",
      execute: (
        { attempt, data, executionId, index, path }
      ) => (attempted(executionId, path, attempt), flakyUntil(index === 1 ? 2 : 0, attempt, data * 10)),
      retry: { schedule: quick, while: (error) => error._tag === "Flaky" }
    }
  })
  .andDoWhile({
    id: "grow",
    step: {
      id: "inc",
      execute: (
        { attempt, data, executionId, iteration, path }
      ) => (attempted(executionId, path, attempt),
        flakyUntil(iteration === 1 ? 1 : 0, attempt, data.map((n) => n + 1))),
      retry: { schedule: quick }
    },
    condition: ({ iteration }) => iteration < 2
  })
  .andBranch({
    id: "route",
    branches: [{
      condition: () => true,
      step: {
        id: "send",
        execute: (
          { attempt, executionId, path }
        ) => (attempted(executionId, path, attempt), flakyUntil(1, attempt, attempt)),
        retry: { schedule: quick }
      }
    }]
  })

/** andRace's racer and andWhen's step commit their retries too (their step reads its inner rows then). */
const raceWhen = workflow({
  id: "inner-race-when",
  name: "Inner race and when",
  purpose: "Flaky racer and when step",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andRace({
    id: "race",
    steps: [{
      id: "only",
      execute: (
        { attempt, data, executionId, path }
      ) => (attempted(executionId, path, attempt), flakyUntil(1, attempt, data)),
      retry: { schedule: quick }
    }]
  })
  .andWhen({
    id: "when",
    condition: () => true,
    step: {
      id: "act",
      execute: (
        { attempt, data, executionId, path }
      ) => (attempted(executionId, path, attempt), flakyUntil(1, attempt, data + 1)),
      retry: { schedule: quick }
    }
  })

/** An item that fails with Fatal (`while` says no), or with Flaky every time (the schedule ends). */
const failing = workflow({
  id: "inner-failing",
  name: "Inner failing",
  purpose: "An item that fails",
  input: Schema.Boolean,
  result: Schema.Unknown
})
  .andForEach({
    id: "each",
    items: ({ data }) => [data],
    step: {
      id: "item",
      execute: ({ attempt, data, executionId, path }) => {
        attempted(executionId, path, attempt)
        return data
          ? Effect.fail(new Fatal({ message: "no point in trying again" }))
          : Effect.fail(new Flaky({ attempt, message: `attempt ${attempt} failed` }))
      },
      retry: {
        schedule: Schedule.spaced("10 millis").pipe(Schedule.intersect(Schedule.recurs(2))),
        while: (error) => error._tag !== "Fatal"
      }
    }
  })

/** An item whose first attempt outlives its timeout: the StepTimeout is retried. */
const slow = workflow({
  id: "inner-slow",
  name: "Inner slow",
  purpose: "A slow first item attempt",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andForEach({
    id: "each",
    items: ({ data }) => [data],
    step: {
      id: "item",
      execute: ({ attempt, data }) => (attempt === 1 ? Effect.as(Effect.sleep("5 seconds"), 0) : Effect.succeed(data)),
      timeout: "100 millis",
      retry: { schedule: Schedule.recurs(1), while: (error) => error instanceof StepTimeout }
    }
  })

/** Inside a child workflow the retries are committed under the child's paths, as at the top level. */
const child = workflow({
  id: "inner-child",
  name: "Inner child",
  purpose: "A flaky inner step in a child",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andAll({
    id: "both",
    steps: [{
      id: "one",
      execute: (
        { attempt, data, executionId }
      ) => (attempted(executionId, "child", attempt), flakyUntil(1, attempt, data)),
      retry: { schedule: quick }
    }]
  })
const parent = workflow({
  id: "inner-parent",
  name: "Inner parent",
  purpose: "Runs the child",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andWorkflow({ id: "nested", workflow: child })

const app = defineApp({ workflows: [inner, raceWhen, failing, slow, child, parent] })

const recordOf = (url: string, executionId: string) =>
  Effect.map(
    fetchJson(`${url}/workflows/executions/${executionId}`),
    (response): Array<any> => response.body.data.events
  )

layer(TestServerLive({ app }), { excludeTestServices: true })("inner step retries", (it) => {
  it.effect("andAll, andForEach, andDoWhile and andBranch inner steps failing are retried: outputs, step-retry events with path, attempt in the context", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/inner-flaky/execute`,
        json({ input: 1, options: { executionId: "ok" } })
      )
      // all: [2, 0]; each: [20, 0]; grow: three iterations of +1, [23, 3]; route: the branch's output, its attempt (2).
      expect(run.body.data).toMatchObject({ status: "completed", result: [2] })
      expect(attemptsAt("ok", "all/upper")).toEqual([1, 2, 3])
      expect(attemptsAt("ok", "each[0]")).toEqual([1])
      expect(attemptsAt("ok", "each[1]")).toEqual([1, 2, 3])
      expect(attemptsAt("ok", "grow[1]")).toEqual([1, 2])
      expect(attemptsAt("ok", "route/send")).toEqual([1, 2])
      const events = yield* recordOf(url, "ok")
      const retries = events.filter((e) => e.type === "step-retry").map((e) => [e.from, e.path, e.attempt])
      expect(retries).toEqual([
        ["upper", "all/upper", 1],
        ["upper", "all/upper", 2],
        ["item", "each[1]", 1],
        ["item", "each[1]", 2],
        ["inc", "grow[1]", 1],
        ["send", "route/send", 1]
      ])
      const first = events.find((e) => e.type === "step-retry")
      expect(first).toMatchObject({ error: "attempt 1 failed", errorDetail: { _tag: "Flaky" }, delayMs: 20 })
      expect(Date.parse(first.retryAt) - Date.parse(first.startTime)).toBe(20)
      // A listing shows top-level events only: no inner retry there.
      const listed = (yield* fetchJson(`${url}/workflows/executions?workflowId=inner-flaky`)).body.data.find((e: any) =>
        e.id === "ok"
      )
      expect(listed.events.some((e: any) => e.type === "step-retry")).toBe(false)
    }))

  it.effect("andRace's racer and andWhen's step are retried, each retry a step-retry event with its path", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/inner-race-when/execute`,
        json({ input: 5, options: { executionId: "rw" } })
      )
      expect(run.body.data).toMatchObject({ status: "completed", result: 6 })
      expect(attemptsAt("rw", "race/only")).toEqual([1, 2])
      expect(attemptsAt("rw", "when/act")).toEqual([1, 2])
      const retries = (yield* recordOf(url, "rw")).filter((e) => e.type === "step-retry").map((
        e
      ) => [e.from, e.path, e.attempt])
      expect(retries).toEqual([["only", "race/only", 1], ["act", "when/act", 1]])
    }))

  it.effect("`while` false stops at once; the end of the schedule fails the step with the last attempt's error", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const fatal = yield* fetchJson(
        `${url}/workflows/inner-failing/execute`,
        json({ input: true, options: { executionId: "fatal" } })
      )
      expect(fatal.status).toBe(500)
      expect(fatal.body.error).toContain("no point in trying again")
      expect(fatal.body.errorDetail).toMatchObject({ _tag: "Fatal" })
      expect(attemptsAt("fatal", "each[0]")).toEqual([1])
      expect((yield* recordOf(url, "fatal")).filter((e) => e.type === "step-retry")).toHaveLength(0)

      const out = yield* fetchJson(
        `${url}/workflows/inner-failing/execute`,
        json({ input: false, options: { executionId: "out" } })
      )
      expect(out.status).toBe(500)
      expect(out.body.error).toContain("attempt 3 failed")
      expect(out.body.errorDetail).toMatchObject({ _tag: "Flaky", fields: { attempt: 3 } })
      expect(attemptsAt("out", "each[0]")).toEqual([1, 2, 3])
      expect((yield* recordOf(url, "out")).filter((e) => e.type === "step-retry").map((e) => e.attempt)).toEqual([1, 2])
    }))

  it.effect("an item's timeout is a StepTimeout its policy may retry", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/inner-slow/execute`,
        json({ input: 7, options: { executionId: "slow" } })
      )
      expect(run.body.data).toMatchObject({ status: "completed", result: [7] })
      const retry = (yield* recordOf(url, "slow")).find((e) => e.type === "step-retry")
      expect(retry).toMatchObject({
        path: "each[0]",
        attempt: 1,
        errorDetail: { _tag: "StepTimeout", fields: { stepId: "item", timeoutMs: 100 } }
      })
    }))

  it.effect("inside a child workflow the retries are committed under the full path", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(
        `${url}/workflows/inner-parent/execute`,
        json({ input: 3, options: { executionId: "child" } })
      )
      expect(run.body.data).toMatchObject({ status: "completed", result: [3] })
      expect(attemptsAt("child", "child")).toEqual([1, 2])
      const retries = (yield* recordOf(url, "child")).filter((event) => event.type === "step-retry")
      expect(retries).toEqual([expect.objectContaining({ from: "one", path: "nested/both/one", attempt: 1 })])
    }))

  it.effect("GET /workflows/:id shows retry and timeoutMs of top-level and inner steps", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const steps = (yield* fetchJson(`${url}/workflows/inner-flaky`)).body.data.steps
      expect(steps[0].steps).toEqual([
        expect.objectContaining({ id: "upper", path: "all/upper", retry: true, timeoutMs: 5000 }),
        expect.not.objectContaining({ retry: true })
      ])
      expect(steps[1].steps[0]).toMatchObject({ id: "item", retry: true })
      expect(steps[1].retry).toBeUndefined()
      const top = (yield* fetchJson(`${url}/workflows/inner-slow`)).body.data.steps[0].steps[0]
      expect(top).toMatchObject({ retry: true, timeoutMs: 100 })
    }))
})

/** Item 0 fails on attempts 1 and 2 (back-offs of 50 ms, then 3 s), and succeeds on its third. */
const patient = workflow({
  id: "inner-patient",
  name: "Inner patient",
  purpose: "A long inner back-off",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andForEach({
    id: "each",
    items: ({ data }) => [data],
    step: {
      id: "item",
      execute: (
        { attempt, data, executionId, path }
      ) => (attempted(executionId, path, attempt), flakyUntil(2, attempt, data + attempt)),
      retry: { schedule: Schedule.fromDelays("50 millis", "3 seconds") }
    }
  })

const takeover = (databaseUrl: Effect.Effect<string, never, any>, store: string) =>
  it.scopedLive(
    "a takeover during an inner back-off keeps the budget: the next attempt is 3 (not 1 again), at the committed due time",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        const id = `takeover-${store}`
        service = 1
        let dueAt = 0
        yield* withService(url, [patient], (base, sql) =>
          Effect.gen(function*() {
            expect(
              (yield* fetchJson(
                `${base}/workflows/inner-patient/run`,
                json({ input: 1, options: { executionId: id } })
              )).status
            ).toBe(201)
            const deadline = Date.now() + 20_000
            let events = yield* recordOf(base, id)
            while (!events.some((e) => e.type === "step-retry" && e.attempt === 2) && Date.now() < deadline) {
              yield* Effect.sleep("20 millis")
              events = yield* recordOf(base, id)
            }
            const second = events.find((e) => e.type === "step-retry" && e.attempt === 2)
            expect(second).toMatchObject({ from: "item", path: "each[0]", delayMs: 3000 })
            dueAt = Date.parse(second.retryAt)
            // As stored (and streamed): the top-level step's index and type.
            const stored = yield* sql<
              { event: string }
            >`SELECT event FROM workflow_events WHERE execution_id = ${id} ORDER BY seq`.pipe(Effect.orDie)
            expect(stored.map((row) => JSON.parse(row.event)).filter((e) => e.type === "step-retry")).toEqual([
              expect.objectContaining({
                from: "item",
                path: "each[0]",
                stepIndex: 0,
                stepType: "andForEach",
                attempt: 1
              }),
              expect.objectContaining({
                from: "item",
                path: "each[0]",
                stepIndex: 0,
                stepType: "andForEach",
                attempt: 2
              })
            ])
            // The state is the inner row `<path>#retry`, replaced at each retry.
            const rows = yield* sql<
              { output: string }
            >`SELECT output FROM workflow_step_outputs WHERE execution_id = ${id} AND path = 'each[0]#retry'`.pipe(
              Effect.orDie
            )
            expect(rows).toHaveLength(1)
            expect(JSON.parse(rows[0].output)).toMatchObject({ stepId: "item", attempt: 3, dueAt: second.retryAt })
          }))
        // Shut down mid back-off: the next service takes the execution over.
        service = 2
        yield* withService(url, [patient], (base) =>
          Effect.gen(function*() {
            const ready = Date.now()
            expect(yield* settled(base, "inner-patient", id)).toMatchObject({ status: "completed", result: [4] })
            expect(attemptsAt(id, "each[0]")).toEqual([1, 2, 3])
            const third = attempts.get(`${id}:each[0]`)![2]
            expect(third).toMatchObject({ service: 2 })
            expect(third.at).toBeGreaterThanOrEqual(dueAt)
            // What was left of the back-off, not the whole 3 s again.
            expect(third.at).toBeLessThan(Math.max(dueAt, ready) + 1500)
            const retries = (yield* recordOf(base, id)).filter((e) => e.type === "step-retry")
            expect(retries.map((e) => e.attempt)).toEqual([1, 2])
          }))
      }),
    60_000
  )

describe("inner retries across a takeover (SQLite)", () => {
  takeover(Effect.map(tempDir, (dir) => `file:${join(dir, "service.db")}`), "sqlite")
})

describe.skipIf(!postgresAvailable)("inner retries across a takeover (Postgres)", () => {
  takeover(freshPostgresDatabase, "pg")
})

const start = () =>
  workflow({ id: "typed", name: "Typed", purpose: "Types", input: Schema.Number, result: Schema.Unknown })

plain("an inner step's retry and timeout are checked when the workflow is defined", () => {
  expect(() =>
    start().andAll({ id: "all", steps: [{ id: "x", execute: () => 1, retry: { schedule: "often" as never } }] })
  ).toThrow(
    "Workflow typed, step x: retry must be { schedule: Schedule, while?: (error) => boolean }"
  )
  expect(() => start().andForEach({ id: "each", items: () => [1], step: { id: "x", execute: () => 1, timeout: 0 } }))
    .toThrow(
      "Workflow typed, step x: timeout must be a positive, finite duration"
    )
  expect(() =>
    start().andBranch({
      id: "route",
      branches: [{
        condition: () => true,
        step: { id: "x", execute: () => 1, retry: { schedule: Schedule.recurs(1), while: 1 as never } }
      }]
    })
  ).toThrow("Workflow typed, step x: retry.while must be a function")
  expect(() =>
    start().andWhen({ id: "when", condition: () => true, step: { id: "x", execute: () => 1, timeout: "30 days" } })
  ).toThrow(/timeout is over 7d/)
})

plain(
  "`while` of an item's, an iteration's and andWhen's step sees that step's E and StepTimeout; andAll's sees unknown",
  () => {
    start().andForEach({
      id: "each",
      items: () => [1, 2],
      step: {
        id: "item",
        execute: ({ data }) => (data > 1 ? Effect.fail(new Flaky({ attempt: 1, message: "" })) : Effect.succeed(data)),
        retry: {
          schedule: Schedule.recurs(1),
          while: (error) => {
            expectTypeOf(error).toEqualTypeOf<Flaky | StepTimeout>()
            // @ts-expect-error "Fatal" is no tag of Flaky | StepTimeout
            return error._tag === "Fatal"
          }
        }
      }
    })
    start().andDoUntil({
      id: "loop",
      step: {
        id: "inc",
        execute: ({ data }) => (data > 9 ? Effect.fail(new Fatal({ message: "" })) : Effect.succeed(data + 1)),
        retry: {
          schedule: Schedule.recurs(1),
          while: (error) => {
            expectTypeOf(error).toEqualTypeOf<Fatal | StepTimeout>()
            return error._tag === "Fatal"
          }
        }
      },
      condition: ({ data }) => data > 3
    })
    start().andWhen({
      id: "when",
      condition: () => true,
      step: {
        id: "inner",
        execute: () => Effect.fail(new Flaky({ attempt: 1, message: "" })),
        retry: {
          schedule: Schedule.recurs(1),
          while: (error) => (expectTypeOf(error).toEqualTypeOf<Flaky | StepTimeout>(), true)
        }
      }
    })
    start().andForEach({
      id: "each",
      items: () => [1],
      step: {
        id: "item",
        execute: () => Effect.fail(new Flaky({ attempt: 1, message: "" })),
        // @ts-expect-error the schedule takes Fatal only, the item fails with Flaky
        retry: { schedule: Schedule.recurWhile((error: Fatal) => error._tag === "Fatal") }
      }
    })
    start().andAll({
      id: "all",
      steps: [{
        id: "one",
        execute: () => Effect.fail(new Flaky({ attempt: 1, message: "" })),
        retry: {
          schedule: Schedule.recurs(1),
          while: (error) => (expectTypeOf(error).toEqualTypeOf<unknown>(), error instanceof Flaky)
        }
      }]
    })
    expect(StepTimeout).toBeDefined()
  }
)
