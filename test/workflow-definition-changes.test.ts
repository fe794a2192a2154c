import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { join } from "node:path"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { eventsOf, settled, startedStep, stateOf, withService } from "./support/serviceOnDatabase.js"
import { fetchJson, json, tempDir } from "./support/TestServer.js"

/**
 * A workflow whose definition changes between two runs of the service on one database: executions
 * stored under the old definition go on at the step with the same id, or are refused (resume: 409)
 * or failed (recovery) when that step is gone.
 */

const shape = (id: string) => ({
  id,
  name: id,
  purpose: "changes between releases",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.Unknown
})

const check = { id: "check", execute: ({ data }: any) => ({ amount: data.amount }) }
const decide = {
  id: "decide",
  execute: ({ data, resumeData, suspend }: any) =>
    resumeData === undefined ? suspend("decision needed") : { ...data, decision: resumeData }
}
const close = (release: string) => ({ id: "close", execute: ({ data }: any) => ({ ...data, closedBy: release }) })
const audit = { id: "audit", execute: ({ data }: any) => ({ ...data, audited: true }) }
const notify = { id: "notify", execute: ({ data }: any) => ({ ...data, notified: true }) }

/** Release 1: check, decide (suspends), close. */
const reviewV1 = workflow(shape("review")).andThen(check).andThen(decide).andThen(close("v1"))
/** Release 2, compatible: a step inserted before `decide`, one appended after `close`. */
const reviewV2 = workflow(shape("review")).andThen(check).andThen(audit).andThen(decide).andThen(close("v2")).andThen(
  notify
)
/** Release 2, incompatible: `decide` renamed, so executions suspended at it have no step to go on at. */
const reviewRenamed = workflow(shape("review")).andThen(check)
  .andThen({ ...decide, id: "approve" }).andThen(close("renamed"))

/** Release 1 of two workflows whose `hold` step never ends (until the service shuts down). */
const holdV1 = (id: string) =>
  workflow(shape(id)).andThen(check).andThen({ id: "hold", execute: () => Effect.never }).andThen(close("v1"))
const holdMoved = (id: string) =>
  workflow(shape(id)).andThen(check).andThen(audit).andThen({
    id: "hold",
    execute: ({ data }: any) => ({ ...data, held: true })
  })
    .andThen(close("v2"))
const holdGone = (id: string) =>
  workflow(shape(id)).andThen(check).andThen({ id: "wait", execute: ({ data }: any) => data }).andThen(close("v2"))

const suspendedUnderV1 = (databaseUrl: string) =>
  withService(databaseUrl, [reviewV1], (url) =>
    Effect.forEach(["kept", "stranded"], (executionId) =>
      Effect.map(
        fetchJson(`${url}/workflows/review/execute`, json({ input: { amount: 70 }, options: { executionId } })),
        (response) =>
          expect(response.body.data).toMatchObject({ status: "suspended", suspension: { suspendedStepIndex: 1 } })
      )))

const definitionChanges = (databaseUrl: Effect.Effect<string, never, any>) => {
  it.scopedLive(
    "resume: refused with 409 when the suspended step is gone; at its new index when steps were added around it",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        yield* suspendedUnderV1(url)

        yield* withService(url, [reviewRenamed], (base) =>
          Effect.gen(function*() {
            const refused = yield* fetchJson(
              `${base}/workflows/review/executions/stranded/resume`,
              json({ resumeData: "yes" })
            )
            expect(refused.status).toBe(409)
            expect(refused.body).toEqual({
              success: false,
              error:
                "Cannot resume: workflow review changed since execution stranded started: its current step \"decide\" is no " +
                "longer in the workflow's definition; resume it at one of the workflow's steps (options.stepId) or cancel it"
            })
            expect((yield* stateOf(base, "review", "stranded")).status).toBe("suspended")
            // The caller may still name the step to go on at.
            const chosen = yield* fetchJson(
              `${base}/workflows/review/executions/stranded/resume`,
              json({ resumeData: "yes", options: { stepId: "approve" } })
            )
            expect(chosen.body.data).toMatchObject({
              status: "completed",
              result: { amount: 70, decision: "yes", closedBy: "renamed" }
            })
          }))

        yield* withService(url, [reviewV2], (base) =>
          Effect.gen(function*() {
            const resumed = yield* fetchJson(
              `${base}/workflows/review/executions/kept/resume`,
              json({ resumeData: "approved" })
            )
            // `audit` (added before `decide`) is not run; `close` and the new `notify` are, as release 2 has them.
            expect(resumed.body.data).toMatchObject({
              status: "completed",
              result: { amount: 70, decision: "approved", closedBy: "v2", notified: true }
            })
            expect(resumed.body.data.result.audited).toBeUndefined()
            const started = (yield* eventsOf(base, "review", "kept")).filter((event) => event.type === "step-start")
            expect(started.map((event) => event.from)).toEqual(["check", "decide", "decide", "close", "notify"])
          }))
      }),
    60_000
  )

  it.scopedLive(
    "recovery: a running execution whose step is gone fails with a clear error; one whose step moved goes on at it",
    () =>
      Effect.gen(function*() {
        const url = yield* databaseUrl
        // Release 1 is shut down while both executions are in `hold`: they are released, still running.
        yield* withService(url, [holdV1("hold-gone"), holdV1("hold-moved")], (base) =>
          Effect.forEach(["hold-gone", "hold-moved"], (workflowId) =>
            Effect.gen(function*() {
              const run = yield* fetchJson(
                `${base}/workflows/${workflowId}/run`,
                json({ input: { amount: 5 }, options: { executionId: `${workflowId}-1` } })
              )
              expect(run.status).toBe(201)
              yield* startedStep(base, workflowId, `${workflowId}-1`, "hold")
            })))

        yield* withService(url, [holdGone("hold-gone"), holdMoved("hold-moved")], (base) =>
          Effect.gen(function*() {
            expect(yield* settled(base, "hold-gone", "hold-gone-1")).toMatchObject({
              status: "error",
              error:
                "cannot recover: workflow hold-gone changed since execution hold-gone-1 started: its current step \"hold\" is " +
                "no longer in the workflow's definition"
            })
            expect(yield* settled(base, "hold-moved", "hold-moved-1")).toMatchObject({
              status: "completed",
              result: { amount: 5, held: true, closedBy: "v2" }
            })
            const started = (yield* eventsOf(base, "hold-moved", "hold-moved-1")).filter((event) =>
              event.type === "step-start"
            )
            expect(started.map((event) =>
              event.from
            )).toEqual(["check", "hold", "hold", "close"])
          }))
      }),
    60_000
  )
}

describe("a workflow's definition changes between releases (SQLite)", () => {
  definitionChanges(Effect.map(tempDir, (dir) => `file:${join(dir, "service.db")}`))
})

describe.skipIf(!postgresAvailable)("a workflow's definition changes between releases (Postgres)", () => {
  definitionChanges(freshPostgresDatabase)
})
