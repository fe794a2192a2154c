import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { join } from "node:path"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { eventsOf, settled, startedStep, stateOf, withService } from "./support/serviceOnDatabase.js"
import { fetchJson, json, tempDir } from "./support/TestServer.js"

/**
 * Issue #30, settled 2 and 3: typed data is stored encoded and decoded when an execution goes on, in
 * whatever process; the data a step gets from another predecessor is checked against the schema of
 * the step before it. Each service below is a fresh engine on the same database (nothing in memory).
 */

const notDate = (what: string, value: unknown) =>
  new Error(`${what} is not a Date but ${typeof value}: ${JSON.stringify(value)}`)

/** Dates in the input, a step's output (outputSchema), the suspension's data and the resume data. */
const dated = workflow({
  id: "dated",
  name: "dated",
  purpose: "Dates through a suspension",
  input: Schema.Struct({ when: Schema.Date }),
  result: Schema.Struct({ when: Schema.Date, at: Schema.Date, approvedAt: Schema.Date })
})
  .andThen({
    id: "stamp",
    outputSchema: Schema.Struct({ at: Schema.Date }),
    execute: ({ data }) => {
      if (!(data.when instanceof Date)) throw notDate("data.when", data.when)
      return { at: new Date(data.when.getTime() + 86_400_000) }
    }
  })
  .andThen({
    id: "approve",
    suspendSchema: Schema.Struct({ due: Schema.Date }),
    resumeSchema: Schema.Struct({ approvedAt: Schema.Date }),
    execute: ({ data, input, resumeData, steps, suspend }) => {
      if (!(input.when instanceof Date)) throw notDate("input.when", input.when)
      if (!(data.at instanceof Date)) throw notDate("data.at", data.at)
      if (!(steps.stamp.at instanceof Date)) throw notDate("steps.stamp.at", steps.stamp.at)
      if (resumeData === undefined) return suspend("approve it", { due: data.at })
      if (!(resumeData.approvedAt instanceof Date)) throw notDate("resumeData.approvedAt", resumeData.approvedAt)
      return { when: input.when, at: data.at, approvedAt: resumeData.approvedAt }
    }
  })

/** `price` declares what it hands on; `approve` does not. */
const refund = workflow({
  id: "refund",
  name: "refund",
  purpose: "resumed elsewhere",
  input: Schema.Struct({ ticket: Schema.String }),
  result: Schema.Unknown
})
  .andThen({
    id: "load",
    outputSchema: Schema.Struct({ ticket: Schema.String }),
    execute: ({ data }) => ({ ticket: data.ticket })
  })
  .andThen({
    id: "approve",
    execute: ({ data, resumeData, suspend }) => resumeData === undefined ? suspend("approve it") : data
  })
  .andThen({ id: "price", outputSchema: Schema.Struct({ amount: Schema.Number }), execute: () => ({ amount: 5 }) })
  .andThen({ id: "pay", execute: ({ data }) => ({ paid: data }) })

const shape = {
  id: "moved",
  name: "moved",
  purpose: "changes between releases",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.Unknown
}
/** Release 1: `hold` never ends (until the service shuts down). */
const movedV1 = workflow(shape).andThen({ id: "check", execute: ({ data }) => data }).andThen({
  id: "hold",
  execute: () => Effect.never
})
/** Release 2: a step inserted before `hold` whose output schema the data `hold` holds does not fit. */
const movedV2 = workflow(shape).andThen({ id: "check", execute: ({ data }) => data })
  .andThen({
    id: "audit",
    outputSchema: Schema.Struct({ audited: Schema.Literal(true) }),
    execute: () => ({ audited: true as const })
  })
  .andThen({ id: "hold", execute: ({ data }) => data })

/** Rows written before: the input as the JSON of its decoded value (5, not "5"). */
const counted = workflow({
  id: "counted",
  name: "counted",
  purpose: "an old row",
  input: Schema.Struct({ n: Schema.NumberFromString }),
  result: Schema.Unknown
})
  .andThen({
    id: "wait",
    execute: ({ data, input, resumeData, suspend }) => {
      if (resumeData === undefined) return suspend("wait")
      if (typeof data.n !== "number" || typeof input.n !== "number") throw new Error(`n is ${typeof data.n}`)
      return { doubled: data.n * 2 }
    }
  })

/** A child whose result holds a Date; the parent neither declares an outputSchema nor suspends after it. */
const datedChild = workflow({
  id: "dated-child",
  name: "dated child",
  purpose: "gives a Date",
  input: Schema.Struct({ when: Schema.Date }),
  result: Schema.Struct({ at: Schema.Date })
})
  .andThen({ id: "child-stamp", execute: ({ data }) => ({ at: data.when }) })
const parent = workflow({
  id: "parent",
  name: "parent",
  purpose: "runs the child",
  input: Schema.Struct({ when: Schema.Date }),
  result: Schema.Struct({ at: Schema.Date })
})
  .andWorkflow({ id: "child", workflow: datedChild })
  .andThen({
    id: "wait",
    execute: ({ data, resumeData, suspend }) => {
      if (!(data.at instanceof Date)) throw notDate("data.at", data.at)
      return resumeData === undefined ? suspend("wait") : data
    }
  })

const encodedStorage = (databaseUrl: Effect.Effect<string, never, any>) => {
  it.scopedLive(
    "input, a step's output, suspension and resume data come back as Dates in another engine; the API shows them as ISO strings",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [dated], (base) =>
          Effect.gen(function*() {
            const suspended = yield* fetchJson(
              `${base}/workflows/dated/execute`,
              json({ input: { when: "2026-01-02T03:04:05.000Z" }, options: { executionId: "d1" } })
            )
            expect(suspended.body.data).toMatchObject({
              status: "suspended",
              suspension: { data: { due: "2026-01-03T03:04:05.000Z" } }
            })
            const stamped = (yield* eventsOf(base, "dated", "d1")).find((event) => event.type === "step-complete")
            expect(stamped.output).toEqual({ at: "2026-01-03T03:04:05.000Z" })
          }))
        yield* withService(url, [dated], (base) =>
          Effect.gen(function*() {
            const resumed = yield* fetchJson(
              `${base}/workflows/dated/executions/d1/resume`,
              json({ resumeData: { approvedAt: "2026-01-04T00:00:00.000Z" } })
            )
            expect(resumed.body.data).toMatchObject({
              status: "completed",
              result: {
                when: "2026-01-02T03:04:05.000Z",
                at: "2026-01-03T03:04:05.000Z",
                approvedAt: "2026-01-04T00:00:00.000Z"
              }
            })
            expect(yield* stateOf(base, "dated", "d1")).toMatchObject({
              input: { when: "2026-01-02T03:04:05.000Z" },
              status: "completed"
            })
          }))
      }),
    60_000
  )

  it.scopedLive(
    "resume at another step: 409 when the data does not fit the output schema of the step before it; no check after a step without one",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [refund], (base) =>
          Effect.gen(function*() {
            for (const executionId of ["r1", "r2"]) {
              const suspended = yield* fetchJson(
                `${base}/workflows/refund/execute`,
                json({ input: { ticket: "T-1" }, options: { executionId } })
              )
              expect(suspended.body.data.status).toBe("suspended")
            }
            const refused = yield* fetchJson(
              `${base}/workflows/refund/executions/r1/resume`,
              json({ resumeData: {}, options: { stepId: "pay" } })
            )
            expect(refused.status).toBe(409)
            expect(refused.body.success).toBe(false)
            expect(refused.body.error).toMatch(
              /^Cannot resume at step pay: the data step pay would be handed does not match the output schema of step price: [\s\S]*amount/
            )
            expect((yield* stateOf(base, "refund", "r1")).status).toBe("suspended")
            // `approve` declares no outputSchema: `price` gets the data unchecked.
            const resumed = yield* fetchJson(
              `${base}/workflows/refund/executions/r2/resume`,
              json({ resumeData: {}, options: { stepId: "price" } })
            )
            expect(resumed.body.data).toMatchObject({ status: "completed", result: { paid: { amount: 5 } } })
          }))
      }),
    60_000
  )

  it.scopedLive(
    "recovery under a changed definition: data that does not fit the output schema of the step now before it ends the execution with an error",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [movedV1], (base) =>
          Effect.gen(function*() {
            expect(
              (yield* fetchJson(
                `${base}/workflows/moved/run`,
                json({ input: { amount: 5 }, options: { executionId: "m1" } })
              )).status
            ).toBe(201)
            yield* startedStep(base, "moved", "m1", "hold")
          }))
        yield* withService(url, [movedV2], (base) =>
          Effect.gen(function*() {
            const state = yield* settled(base, "moved", "m1")
            expect(state.status).toBe("error")
            expect(state.error).toMatch(
              /^cannot continue: the data step hold would be handed does not match the output schema of step audit: [\s\S]*audited/
            )
          }))
      }),
    60_000
  )

  it.scopedLive(
    "a child workflow's result is stored by its result schema: the step after it gets a Date, in another engine too",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [parent], (base) =>
          Effect.gen(function*() {
            const suspended = yield* fetchJson(
              `${base}/workflows/parent/execute`,
              json({ input: { when: "2026-01-02T03:04:05.000Z" }, options: { executionId: "p1" } })
            )
            expect(suspended.body).toMatchObject({ data: { status: "suspended" } })
          }))
        yield* withService(url, [parent], (base) =>
          Effect.gen(function*() {
            const resumed = yield* fetchJson(
              `${base}/workflows/parent/executions/p1/resume`,
              json({ resumeData: true })
            )
            expect(resumed.body.data).toMatchObject({ status: "completed", result: { at: "2026-01-02T03:04:05.000Z" } })
          }))
      }),
    60_000
  )

  it.scopedLive(
    "a row written before (input stored as its decoded value's JSON) still continues",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, [counted], (base, sql) =>
          Effect.gen(function*() {
            const suspended = yield* fetchJson(
              `${base}/workflows/counted/execute`,
              json({ input: { n: "21" }, options: { executionId: "old" } })
            )
            expect(suspended.body.data.status).toBe("suspended")
            const [row] = yield* sql<{ input: string }>`SELECT input FROM workflow_executions WHERE id = 'old'`
            expect(JSON.parse(row.input)).toEqual({ n: "21" })
            // As the service wrote it before: the decoded input's JSON.
            yield* sql`UPDATE workflow_executions SET input = ${JSON.stringify({ n: 21 })}, current_data = ${
              JSON.stringify({ n: 21 })
            } WHERE id = 'old'`
          }).pipe(Effect.orDie))
        yield* withService(url, [counted], (base) =>
          Effect.gen(function*() {
            const resumed = yield* fetchJson(
              `${base}/workflows/counted/executions/old/resume`,
              json({ resumeData: true })
            )
            expect(resumed.body.data).toMatchObject({ status: "completed", result: { doubled: 42 } })
          }))
      }),
    60_000
  )
}

describe("typed data stored encoded (SQLite)", () => {
  encodedStorage(Effect.map(tempDir, (dir) => `file:${join(dir, "service.db")}`))
})

describe.skipIf(!postgresAvailable)("typed data stored encoded (Postgres)", () => {
  encodedStorage(freshPostgresDatabase)
})
