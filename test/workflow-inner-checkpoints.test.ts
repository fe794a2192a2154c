import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { join } from "node:path"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { withService } from "./support/serviceOnDatabase.js"
import { fetchJson, json, tempDir } from "./support/TestServer.js"

/**
 * Issue #31 item 4: the inner steps of andAll and andRace and a child workflow's steps are committed one
 * by one (path `<outer>/<inner>`): what was committed before a suspension is not run again on resume, and
 * a suspension inside a child resumes that child step with the data, not every step.
 */

const runs = new Map<string, number>()
const ran = (key: string) => runs.set(key, (runs.get(key) ?? 0) + 1)
const seen = new Map<string, unknown>()

const parallel = workflow({
  id: "parallel",
  name: "parallel",
  purpose: "andAll",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andAll({
    id: "measure",
    steps: [
      {
        id: "upper",
        outputSchema: Schema.Struct({ at: Schema.Date }),
        execute: () => (ran("upper"), { at: new Date(0) })
      },
      {
        id: "lower",
        execute: (
          { data, resumeData, suspend }
        ) => (ran("lower"), resumeData === undefined ? suspend("lower waits") : data - 1)
      }
    ]
  })
  .andRace({
    id: "first",
    steps: [
      { id: "fast", execute: () => "fast" },
      { id: "slow", execute: () => Effect.as(Effect.sleep("5 seconds"), "slow") }
    ]
  })
  .andThen({
    id: "check",
    execute: ({ steps }) => {
      if (!(steps.upper.at instanceof Date)) throw new Error("upper.at is not a Date")
      return { lower: steps.lower, first: steps.first }
    }
  })

const child = workflow({ id: "child", name: "child", purpose: "steps", input: Schema.Number, result: Schema.Unknown })
  .andThen({ id: "load", execute: ({ data }) => (ran("load"), data + 1) })
  .andThen({
    id: "approve",
    execute: (
      { data, resumeData, suspend }
    ) => (ran("approve"), resumeData === undefined ? suspend("approve it") : { data, approved: resumeData })
  })
  .andThen({ id: "send", execute: ({ data, resumeData }) => (seen.set("send", resumeData), ran("send"), data) })

const parent = workflow({
  id: "parent",
  name: "parent",
  purpose: "child",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andWorkflow({ id: "notify", workflow: child })

const itemised = workflow({
  id: "itemised",
  name: "itemised",
  purpose: "item suspends",
  input: Schema.Array(Schema.Number),
  result: Schema.Unknown
})
  .andForEach({
    id: "each",
    items: ({ data }) => data,
    step: {
      id: "one",
      execute: ({ data, resumeData, suspend }) => (data === 2 && resumeData === undefined ? suspend("two") : data)
    }
  })

/** A child whose loop suspends at an item, then a grandchild that suspends at its second step. */
const grandchild = workflow({
  id: "grandchild",
  name: "grandchild",
  purpose: "nested",
  input: Schema.Number,
  result: Schema.Number
})
  .andThen({ id: "load", execute: ({ data, path }) => (ran(path), data + 1) })
  .andThen({
    id: "wait",
    execute: (
      { data, path, resumeData, suspend }
    ) => (ran(path), resumeData === undefined ? suspend("grandchild waits") : data)
  })

const loopingChild = workflow({
  id: "looping-child",
  name: "looping child",
  purpose: "loop",
  input: Schema.Array(Schema.Number),
  result: Schema.Number
})
  .andForEach({
    id: "each",
    items: ({ data }) => data,
    step: {
      id: "one",
      execute: (
        { data, path, resumeData, suspend }
      ) => (ran(path), data === 2 && resumeData === undefined ? suspend("item waits") : data * 10)
    }
  })
  .andWorkflow({ id: "deeper", workflow: grandchild, input: ({ data }) => data.length })

const nesting = workflow({
  id: "nesting",
  name: "nesting",
  purpose: "child with a loop and a grandchild",
  input: Schema.Array(Schema.Number),
  result: Schema.Number
})
  .andWorkflow({ id: "outer", workflow: loopingChild })

const all = [parallel, parent, itemised, nesting]

const recordEvents = (base: string, executionId: string) =>
  Effect.map(
    fetchJson(`${base}/workflows/executions/${executionId}`),
    (response): Array<any> => response.body.data.events
  )

const inner = (databaseUrl: Effect.Effect<string, never, any>, store: string) => {
  it.scopedLive(
    "andAll: an inner step committed before a sibling suspended does not run again on resume (another engine); andRace's winner goes with its step",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        runs.clear()
        const id = `p-${store}`
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const suspended = yield* fetchJson(
              `${base}/workflows/parallel/execute`,
              json({ input: 5, options: { executionId: id } })
            )
            expect(suspended.body.data).toMatchObject({ status: "suspended", suspension: { reason: "lower waits" } })
          }))
        yield* withService(url, all, (base, sql) =>
          Effect.gen(function*() {
            const resumed = yield* fetchJson(
              `${base}/workflows/parallel/executions/${id}/resume`,
              json({ resumeData: {} })
            )
            expect(resumed.body.data).toMatchObject({ status: "completed", result: { lower: 4, first: "fast" } })
            expect(Object.fromEntries(runs)).toEqual({ upper: 1, lower: 2 })
            const rows = yield* sql<{ path: string; output: string }>`SELECT path, output FROM workflow_step_outputs
            WHERE execution_id = ${id} ORDER BY path`.pipe(Effect.orDie)
            // The last inner step to complete, and andRace's winner, are committed with their step (one write less).
            expect(rows.map((row) => [row.path, JSON.parse(row.output)])).toEqual([["measure/upper", {
              at: "1970-01-01T00:00:00.000Z"
            }]])
            const paths = (yield* recordEvents(base, id)).flatMap((
              event
            ) => (event.path === undefined ? [] : [[event.from, event.path]]))
            expect(paths).toEqual([["upper", "measure/upper"]])
            // A listing shows top-level events only.
            const listed = (yield* fetchJson(`${base}/workflows/executions?workflowId=parallel`)).body.data.find((
              e: any
            ) => e.id === id)
            expect(listed.events.some((event: any) => event.path !== undefined)).toBe(false)
          }))
      }),
    60_000
  )

  it.scopedLive(
    "options.stepId of resume accepts a path (the step it names goes on; committed inner work is reused); an andForEach item's suspension names the item",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        runs.clear()
        const id = `cp-${store}`
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            yield* fetchJson(`${base}/workflows/parent/execute`, json({ input: 1, options: { executionId: id } }))
            const resumed = yield* fetchJson(
              `${base}/workflows/parent/executions/${id}/resume`,
              json({ resumeData: { by: "bob" }, options: { stepId: "notify/approve" } })
            )
            expect(resumed.body.data).toMatchObject({
              status: "completed",
              result: { data: 2, approved: { by: "bob" } }
            })
            expect(runs.get("load")).toBe(1)
            const looped = yield* fetchJson(
              `${base}/workflows/itemised/execute`,
              json({ input: [1, 2, 3], options: { executionId: `i-${store}` } })
            )
            expect(looped.body.data).toMatchObject({ status: "suspended" })
            const state = (yield* fetchJson(`${base}/workflows/itemised/executions/i-${store}/state`)).body.data
            expect(state.suspension).toMatchObject({ stepId: "each[1]", stepIndex: 0 })
            // A path whose top-level step is not in the workflow: 400, the execution stays suspended.
            const unknownStep = yield* fetchJson(
              `${base}/workflows/itemised/executions/i-${store}/resume`,
              json({ resumeData: {}, options: { stepId: "nope[1]" } })
            )
            expect(unknownStep.status).toBe(400)
            expect(unknownStep.body.error).toBe("Workflow itemised has no step nope[1]")
            const byPath = yield* fetchJson(
              `${base}/workflows/itemised/executions/i-${store}/resume`,
              json({ resumeData: {}, options: { stepId: "each[1]" } })
            )
            expect(byPath.body.data).toMatchObject({ status: "completed", result: [1, 2, 3] })
          }))
      }),
    60_000
  )

  it.scopedLive(
    "a child workflow's steps are committed one by one: on resume the suspended child step gets the data, earlier ones do not run again, later ones get none",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        runs.clear()
        seen.clear()
        const id = `c-${store}`
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const suspended = yield* fetchJson(
              `${base}/workflows/parent/execute`,
              json({ input: 1, options: { executionId: id } })
            )
            expect(suspended.body.data).toMatchObject({
              status: "suspended",
              suspension: { reason: "approve it", suspendedStepIndex: 0 }
            })
            // The suspension names its path (settled 7); stepIndex is the top-level index.
            const state = (yield* fetchJson(`${base}/workflows/parent/executions/${id}/state`)).body.data
            expect(state.suspension).toMatchObject({ stepId: "notify/approve", stepIndex: 0 })
          }))
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const resumed = yield* fetchJson(
              `${base}/workflows/parent/executions/${id}/resume`,
              json({ resumeData: { by: "ada" } })
            )
            expect(resumed.body.data).toMatchObject({
              status: "completed",
              result: { data: 2, approved: { by: "ada" } }
            })
            expect(Object.fromEntries(runs)).toEqual({ load: 1, approve: 2, send: 1 })
            expect(seen.get("send")).toBeUndefined()
            const paths = (yield* recordEvents(base, id)).flatMap((
              event
            ) => (event.path === undefined ? [] : [event.path]))
            // The child's last step is committed with the andWorkflow step itself.
            expect(paths).toEqual(["notify/load", "notify/approve"])
          }))
      }),
    60_000
  )

  it.scopedLive(
    "inside a child workflow, a loop's items and a grandchild's steps are committed under their full paths: resumes re-run only what was not",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        runs.clear()
        const id = `n-${store}`
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const atItem = yield* fetchJson(
              `${base}/workflows/nesting/execute`,
              json({ input: [1, 2, 3], options: { executionId: id } })
            )
            expect(atItem.body.data).toMatchObject({ status: "suspended", suspension: { reason: "item waits" } })
            expect((yield* fetchJson(`${base}/workflows/nesting/executions/${id}/state`)).body.data.suspension)
              .toMatchObject({ stepId: "outer/each[1]" })
          }))
        yield* withService(url, all, (base, sql) =>
          Effect.gen(function*() {
            const atGrandchild = yield* fetchJson(
              `${base}/workflows/nesting/executions/${id}/resume`,
              json({ resumeData: {} })
            )
            expect(atGrandchild.body.data).toMatchObject({
              status: "suspended",
              suspension: { reason: "grandchild waits" }
            })
            expect((yield* fetchJson(`${base}/workflows/nesting/executions/${id}/state`)).body.data.suspension)
              .toMatchObject({ stepId: "outer/deeper/wait" })
            const done = yield* fetchJson(`${base}/workflows/nesting/executions/${id}/resume`, json({ resumeData: {} }))
            expect(done.body.data).toMatchObject({ status: "completed", result: 4 })
            expect(Object.fromEntries(runs)).toEqual({
              "outer/each[0]": 1,
              "outer/each[1]": 2,
              "outer/each[2]": 1,
              "outer/deeper/load": 1,
              "outer/deeper/wait": 2
            })
            const rows = yield* sql<
              { path: string }
            >`SELECT path FROM workflow_step_outputs WHERE execution_id = ${id} ORDER BY path`.pipe(Effect.orDie)
            expect(rows.map((row) => row.path)).toEqual([
              "outer/deeper/load",
              "outer/each",
              "outer/each#items",
              "outer/each[0]",
              "outer/each[1]",
              "outer/each[2]"
            ])
            // GET /workflows/:id shows the child's steps and their own inner steps, under full paths.
            const described = (yield* fetchJson(`${base}/workflows/nesting`)).body.data.steps[0].steps
            expect(described.map((one: any) => `${one.path}:${one.type}`)).toEqual([
              "outer/each:andForEach",
              "outer/each[]:item",
              "outer/deeper:andWorkflow",
              "outer/deeper/load:andThen",
              "outer/deeper/wait:andThen"
            ])
          }))
      }),
    60_000
  )
}

describe("inner checkpoints of andAll, andRace and child workflows (SQLite)", () => {
  inner(Effect.map(tempDir, (dir) => `file:${join(dir, "service.db")}`), "sqlite")
})

describe.skipIf(!postgresAvailable)("inner checkpoints of andAll, andRace and child workflows (Postgres)", () => {
  inner(freshPostgresDatabase, "pg")
})
