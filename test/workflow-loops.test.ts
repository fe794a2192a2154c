import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { join } from "node:path"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { settled, withService } from "./support/serviceOnDatabase.js"
import { fetchJson, json, tempDir } from "./support/TestServer.js"

/**
 * Issue #31 items 2 and 4: andForEach, andDoWhile/andDoUntil, andBranch and andMap; each item,
 * iteration and branch committed (migration 0021) so that work committed before a suspension (or a
 * crash: workflow-loops-process.test.ts) is not run again, events of inner steps with their `path`.
 */

const runs = new Map<string, number>()
const ran = (key: string) => runs.set(key, (runs.get(key) ?? 0) + 1)

const Numbers = Schema.Struct({ numbers: Schema.Array(Schema.Number) })

/** Item 3 suspends the first time: items 0-2 are committed by then (concurrency 1). */
const doubling = workflow({
  id: "doubling",
  name: "doubling",
  purpose: "per-item commits",
  input: Numbers,
  result: Schema.Array(Schema.Number)
})
  .andForEach({
    id: "double",
    items: ({ data }) => {
      ran("items")
      return data.numbers
    },
    step: {
      id: "one",
      execute: ({ data, index, path, resumeData, suspend }) => {
        ran(`${path}`)
        if (index === 3 && resumeData === undefined) return suspend("item 3 waits")
        return data * 2
      }
    }
  })

const counting = workflow({
  id: "counting",
  name: "counting",
  purpose: "loops",
  input: Schema.Number,
  result: Schema.Number
})
  .andDoWhile({
    id: "up",
    step: {
      id: "inc",
      execute: (
        { data, iteration, resumeData, suspend }
      ) => (iteration === 2 && resumeData === undefined ? suspend("third") : data + 1)
    },
    condition: ({ data }) => data < 5
  })
  .andDoUntil({ id: "down", step: { id: "dec", execute: ({ data }) => data - 2 }, condition: ({ data }) => data <= 0 })

const bounded = workflow({
  id: "bounded",
  name: "bounded",
  purpose: "maxIterations",
  input: Schema.Number,
  result: Schema.Number
})
  .andDoWhile({
    id: "forever",
    maxIterations: 3,
    step: { id: "same", execute: ({ data }) => data },
    condition: () => true
  })

const branching = workflow({
  id: "branching",
  name: "branching",
  purpose: "branches",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andBranch({
    id: "route",
    branches: [
      { condition: ({ data }) => data > 0, step: { id: "positive", execute: ({ data }) => `+${data}` } },
      { condition: ({ data }) => data < 0, step: { id: "negative", execute: ({ data }) => -data } },
      { condition: () => Effect.succeed(true), step: { id: "always", execute: ({ data }) => ({ seen: data }) } }
    ]
  })
  .andMap({
    id: "summary",
    map: {
      first: ({ data }) => data[0] ?? null,
      count: ({ data }) => Promise.resolve(data.filter((entry) => entry !== undefined && entry !== null).length),
      doubled: ({ input }) => Effect.succeed(input * 2)
    }
  })

const tooMany = workflow({
  id: "too-many",
  name: "too many",
  purpose: "bounds",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andForEach({
    id: "each",
    items: ({ data }) => Array.from({ length: data }, (_, i) => i),
    step: { id: "item", execute: ({ data }) => data }
  })

const tooWide = workflow({
  id: "too-wide",
  name: "too wide",
  purpose: "bounds",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andForEach({ id: "each", concurrency: 65, items: () => [1], step: { id: "item", execute: ({ data }) => data } })

const tooLarge = workflow({
  id: "too-large",
  name: "too large",
  purpose: "bounds",
  input: Schema.Number,
  result: Schema.Unknown
})
  .andForEach({
    id: "each",
    items: () => [1, 2],
    step: { id: "item", execute: ({ data }) => "x".repeat(data * 700_000) }
  })

let hang = true
const movedShape = {
  id: "moved",
  name: "moved",
  purpose: "changes between releases",
  input: Schema.Number,
  result: Schema.Unknown
}
const movedItem = {
  id: "item",
  execute: ({ data, path }: { readonly data: number; readonly path: string }) => {
    ran(path)
    return hang && data >= 10 ? Effect.never : Effect.succeed(data)
  }
}
/** Release 1: items from 10 on never end (until the service shuts down). */
const movedV1 = workflow(movedShape).andForEach({
  id: "each",
  items: ({ data }) => Array.from({ length: data }, (_, i) => i),
  step: movedItem
})
/** Release 2: a step inserted before the loop. */
const movedV2 = workflow(movedShape).andThen({ id: "added", execute: ({ data }) => data })
  .andForEach({ id: "each", items: ({ data }) => Array.from({ length: data }, (_, i) => i), step: movedItem })

/** Items whose step declares an outputSchema with a Date: stored encoded, Dates again after a resume. */
const stamped = workflow({
  id: "stamped",
  name: "stamped",
  purpose: "typed items",
  input: Schema.Array(Schema.Number),
  result: Schema.Unknown
})
  .andForEach({
    id: "stamp",
    items: ({ data }) => data,
    step: {
      id: "at",
      outputSchema: Schema.Struct({ at: Schema.Date }),
      execute: ({ data }) => ({ at: new Date(data) })
    }
  })
  .andThen({
    id: "wait",
    execute: ({ data, resumeData, suspend }) => {
      if (!data.every((entry) => entry.at instanceof Date)) throw new Error("not Dates")
      return resumeData === undefined ? suspend("wait") : data.map((entry) => entry.at.getTime())
    }
  })

const all = [stamped, doubling, counting, bounded, branching, tooMany, tooWide, tooLarge]

/** The execution's events, from its record (a listing shows top-level events only). */
const eventsOf = (base: string, _workflowId: string, executionId: string) =>
  Effect.map(
    fetchJson(`${base}/workflows/executions/${executionId}`),
    (response): Array<any> => response.body.data?.events ?? []
  )

const execute = (base: string, workflowId: string, input: unknown, executionId: string) =>
  Effect.map(
    fetchJson(`${base}/workflows/${workflowId}/execute`, json({ input, options: { executionId } })),
    (response) => response.body.data
  )

const loops = (databaseUrl: Effect.Effect<string, never, any>, store: string) => {
  it.scopedLive(
    "andForEach: outputs in item order, each item committed: a resume runs only the unfinished items; inner events carry their path",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        runs.clear()
        const id = `d-${store}`
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const suspended = yield* execute(base, "doubling", { numbers: [1, 2, 3, 4, 5] }, id)
            expect(suspended).toMatchObject({ status: "suspended", suspension: { reason: "item 3 waits" } })
          }))
        // Another engine on the same database: nothing of the first in memory.
        yield* withService(url, all, (base, sql) =>
          Effect.gen(function*() {
            const resumed = yield* fetchJson(
              `${base}/workflows/doubling/executions/${id}/resume`,
              json({ resumeData: {} })
            )
            expect(resumed.body.data).toMatchObject({ status: "completed", result: [2, 4, 6, 8, 10] })
            expect(Object.fromEntries(runs)).toEqual({
              items: 1,
              "double[0]": 1,
              "double[1]": 1,
              "double[2]": 1,
              "double[3]": 2,
              "double[4]": 1
            })
            const events = yield* eventsOf(base, "doubling", id)
            const inner = events.filter((event) => event.type === "step-complete" && event.from === "one")
            expect(inner.map((event) => event.output)).toEqual([2, 4, 6, 8, 10])
            const stored = yield* fetchJson(`${base}/workflows/executions?workflowId=doubling`)
            expect(stored.status).toBe(200)
            const rows = yield* sql<
              { path: string }
            >`SELECT path FROM workflow_step_outputs WHERE execution_id = ${id} ORDER BY path`.pipe(Effect.orDie)
            expect(rows.map((row) => row.path)).toEqual([
              "double#items",
              "double[0]",
              "double[1]",
              "double[2]",
              "double[3]",
              "double[4]"
            ])
            // Deleting the execution deletes its inner outputs, in the same transaction.
            const deleted = yield* fetchJson(`${base}/workflows/doubling/executions/${id}`, { method: "DELETE" })
            expect(deleted.status).toBe(200)
            const left = yield* sql<
              { n: number }
            >`SELECT COUNT(*) AS n FROM workflow_step_outputs WHERE execution_id = ${id}`.pipe(Effect.orDie)
            expect(Number(left[0].n)).toBe(0)
          }))
      }),
    60_000
  )

  it.scopedLive(
    "andDoWhile/andDoUntil: the last iteration's output, each iteration committed; maxIterations fails the step with a message",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const suspended = yield* execute(base, "counting", 1, `c-${store}`)
            expect(suspended).toMatchObject({ status: "suspended" })
            const resumed = yield* fetchJson(
              `${base}/workflows/counting/executions/c-${store}/resume`,
              json({ resumeData: {} })
            )
            // up: 2, 3, (suspends) 4, 5 -> 5; down: 3, 1, -1 -> -1
            expect(resumed.body.data).toMatchObject({ status: "completed", result: -1 })
            const paths = (yield* eventsOf(base, "counting", `c-${store}`)).flatMap((event) =>
              event.path === undefined ? [] : [event.path]
            )
            expect(paths).toEqual(["up[0]", "up[1]", "up[2]", "up[3]", "down[0]", "down[1]", "down[2]"])
            const failed = yield* fetchJson(`${base}/workflows/bounded/execute`, json({ input: 1 }))
            expect(failed.body.error).toBe(
              "Failed to execute workflow: step forever: reached its maxIterations (3) and its condition still asks for another iteration"
            )
          }))
      }),
    60_000
  )

  it.scopedLive(
    "andBranch: one entry per branch (undefined where the condition did not hold); andMap: the object of the keys' values",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, all, (base, sql) =>
          Effect.gen(function*() {
            const done = yield* execute(base, "branching", 4, `b-${store}`)
            expect(done).toMatchObject({ status: "completed", result: { first: "+4", count: 2, doubled: 8 } })
            const rows = yield* sql<{ path: string; output: string }>`SELECT path, output FROM workflow_step_outputs
            WHERE execution_id = ${`b-${store}`} ORDER BY path`.pipe(Effect.orDie)
            expect(rows.map((row) => [row.path, JSON.parse(row.output)])).toEqual([
              ["route#conditions", [true, false, true]],
              ["route/always", { seen: 4 }],
              ["route/positive", "+4"]
            ])
          }))
      }),
    60_000
  )

  it.scopedLive(
    "a changed definition: a running loop whose last events are all its items' goes on at the loop by its id; committed items do not run again",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        runs.clear()
        hang = true
        const id = `m-${store}`
        yield* withService(url, [movedV1], (base) =>
          Effect.gen(function*() {
            expect(
              (yield* fetchJson(`${base}/workflows/moved/run`, json({ input: 12, options: { executionId: id } })))
                .status
            ).toBe(201)
            const deadline = Date.now() + 20_000
            while (
              (yield* eventsOf(base, "moved", id)).filter((event) => event.path !== undefined).length < 10 &&
              Date.now() < deadline
            ) {
              yield* Effect.sleep("50 millis")
            }
          }))
        hang = false
        yield* withService(url, [movedV2], (base) =>
          Effect.gen(function*() {
            const state = yield* settled(base, "moved", id)
            expect(state).toMatchObject({ status: "completed", result: Array.from({ length: 12 }, (_, i) => i) })
            for (let i = 0; i < 10; i++) expect(runs.get(`each[${i}]`), `each[${i}]`).toBe(1)
            expect(runs.get("each[10]")).toBe(2)
          }))
      }),
    60_000
  )

  it.scopedLive(
    "an item step's outputSchema: items stored encoded (JSON in the events), Dates again in the next step after a restart",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        const id = `s-${store}`
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            expect(yield* execute(base, "stamped", [0, 86_400_000], id)).toMatchObject({ status: "suspended" })
            const inner = (yield* eventsOf(base, "stamped", id)).filter((event) => event.path !== undefined)
            expect(inner.map((event) => event.output)).toEqual([{ at: "1970-01-01T00:00:00.000Z" }, {
              at: "1970-01-02T00:00:00.000Z"
            }])
          }))
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const resumed = yield* fetchJson(
              `${base}/workflows/stamped/executions/${id}/resume`,
              json({ resumeData: {} })
            )
            expect(resumed.body.data).toMatchObject({ status: "completed", result: [0, 86_400_000] })
          }))
      }),
    60_000
  )

  it.scopedLive(
    "GET /workflows/:id shows the inner steps of loops, branches and maps with their types, paths and JSON Schemas",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const branchingDetails = (yield* fetchJson(`${base}/workflows/branching`)).body.data
            expect(
              branchingDetails.steps.map((
                step: any
              ) => [step.id, step.type, step.steps?.map((one: any) => [one.path, one.type])])
            ).toEqual([
              ["route", "andBranch", [["route/positive", "branch"], ["route/negative", "branch"], [
                "route/always",
                "branch"
              ]]],
              ["summary", "andMap", [["summary/first", "mapKey"], ["summary/count", "mapKey"], [
                "summary/doubled",
                "mapKey"
              ]]]
            ])
            const stampedDetails = (yield* fetchJson(`${base}/workflows/stamped`)).body.data
            expect(stampedDetails.steps[0].steps).toMatchObject([{
              id: "at",
              path: "stamp[]",
              type: "item",
              outputSchema: { type: "object", required: ["at"] }
            }])
            expect(stampedDetails.steps[1].steps).toBeUndefined()
          }))
      }),
    60_000
  )

  it.scopedLive(
    "bounds: over 10,000 items, concurrency over 64, over 16 MiB of outputs fail the step with a message",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* withService(url, all, (base) =>
          Effect.gen(function*() {
            const many = yield* fetchJson(`${base}/workflows/too-many/execute`, json({ input: 10_001 }))
            expect(many.body.error).toBe(
              "Failed to execute workflow: step each: items has 10001 items, over the 10000 an andForEach may iterate"
            )
            const wide = yield* fetchJson(`${base}/workflows/too-wide/execute`, json({ input: 1 }))
            expect(wide.body.error).toBe(
              "Failed to execute workflow: step each: concurrency must be an integer from 1 to 64, not 65"
            )
            const large = yield* fetchJson(`${base}/workflows/too-large/execute`, json({ input: 1 }))
            expect(large.body.error).toBe(
              "Failed to execute workflow: step each: each[1]: its output is 1.3 MiB as JSON, over the 1 MiB an item or iteration may be"
            )
          }))
      }),
    60_000
  )
}

describe("loops and branches (SQLite)", () => {
  loops(Effect.map(tempDir, (dir) => `file:${join(dir, "service.db")}`), "sqlite")
})

describe.skipIf(!postgresAvailable)("loops and branches (Postgres)", () => {
  loops(freshPostgresDatabase, "pg")
})
