import { expect, layer } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { defineApp } from "../src/App.js"
import { workflow } from "../src/workflows/definition/Workflow.js"
import { postSse } from "./support/fakeProvider.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

// Issue #30: suspend(reason, data) typed by suspendSchema, checked at run time, bounded and shown.

const Size = Schema.Struct({ size: Schema.Number })

const sized = workflow({
  id: "sized",
  name: "Sized",
  purpose: "Suspends with data shaped by its input",
  input: Schema.Struct({ size: Schema.Number, bad: Schema.Boolean }),
  result: Schema.Struct({ ok: Schema.Boolean }),
  // The workflow's suspendSchema is the default of its steps.
  suspendSchema: Schema.Struct({ note: Schema.String, items: Schema.Array(Schema.Number) })
})
  .andThen({
    id: "park",
    execute: ({ data, resumeData, suspend }) => {
      if (resumeData !== undefined) return { ok: true }
      const items = Array.from({ length: data.size }, (_, i) => i)
      // A value failing the schema at run time (what an untyped caller or a cast can hand it).
      const note: string = data.bad ? (7 as unknown as string) : "look at these"
      return suspend("needs a look", { note, items })
    }
  })

const inner = workflow({
  id: "inner-suspend",
  name: "Inner",
  purpose: "andAll inner steps suspend with the outer schema",
  input: Size,
  result: Schema.Unknown
})
  .andAll({
    id: "both",
    suspendSchema: Size,
    steps: [
      {
        id: "first",
        execute: (
          { data, resumeData, suspend }
        ) => (resumeData === undefined ? suspend("inner", { size: data.size }) : 1)
      },
      { id: "second", execute: () => 2 }
    ]
  })

/** The example's approval, with the amount shown to the approver. */
const approval = workflow({
  id: "approval",
  name: "Approval",
  purpose: "Approve an expense, asking a manager when the amount is over 100",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.Struct({ approved: Schema.Boolean, amount: Schema.Number })
})
  .andThen({ id: "check", execute: ({ data }) => ({ amount: data.amount, needsApproval: data.amount > 100 }) })
  .andThen({
    id: "manager-approval",
    resumeSchema: Schema.Struct({ approved: Schema.Boolean }),
    suspendSchema: Schema.Struct({ amount: Schema.Number }),
    execute: ({ data, resumeData, suspend }) => {
      if (!data.needsApproval) return { approved: true, amount: data.amount }
      if (resumeData === undefined) return suspend("manager approval required", { amount: data.amount })
      return { approved: resumeData.approved, amount: data.amount }
    }
  })

const app = defineApp({ workflows: [approval, sized, inner] })

layer(TestServerLive({ app }), { excludeTestServices: true })("suspension data", (it) => {
  it.effect("the suspension's data is in the execution result, the state and the stream's events", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 250 } }))
      expect(run.body.data).toMatchObject({
        status: "suspended",
        suspension: { reason: "manager approval required", suspendedStepIndex: 1, data: { amount: 250 } }
      })
      const id = run.body.data.executionId
      const state = yield* fetchJson(`${url}/workflows/approval/executions/${id}/state`)
      expect(state.body.data.suspension).toMatchObject({ stepId: "manager-approval", data: { amount: 250 } })

      const streamed = yield* postSse(`${url}/workflows/approval/stream`, { input: { amount: 300 } })
      const suspended = streamed.events.find((e) => e.data.type === "workflow-suspended")
      expect(suspended?.data).toMatchObject({ from: "manager-approval", data: { amount: 300 } })
      expect(streamed.events.at(-1)!.data.suspension).toMatchObject({ data: { amount: 300 } })

      // A suspension from the API has no data: the field is left out, as before.
      const small = yield* fetchJson(`${url}/workflows/approval/execute`, json({ input: { amount: 5 } }))
      expect(small.body.data.suspension).toBeUndefined()
    }))

  it.effect("data failing suspendSchema fails the step naming the path; over 64 KiB fails it with the size", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const ok = yield* fetchJson(`${url}/workflows/sized/execute`, json({ input: { size: 3, bad: false } }))
      expect(ok.body.data.suspension.data).toEqual({ note: "look at these", items: [0, 1, 2] })

      const bad = yield* fetchJson(`${url}/workflows/sized/execute`, json({ input: { size: 1, bad: true } }))
      expect(bad.status).toBe(500)
      expect(bad.body.error).toContain("step park: suspend data does not match its schema")
      expect(bad.body.error).toContain("[\"note\"]")
      expect(bad.body.error).toContain("Expected string, actual 7")

      // 20 000 numbers are well over 64 KiB of JSON.
      const big = yield* fetchJson(`${url}/workflows/sized/execute`, json({ input: { size: 20_000, bad: false } }))
      expect(big.status).toBe(500)
      expect(big.body.error).toMatch(
        /step park: suspend data is [\d.]+ KiB as JSON, over the 64 KiB a suspension may hold/
      )
    }))

  it.effect("an andAll inner step suspends with the outer step's schema, and resumes", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const run = yield* fetchJson(`${url}/workflows/inner-suspend/execute`, json({ input: { size: 4 } }))
      expect(run.body.data.suspension).toMatchObject({ reason: "inner", data: { size: 4 } })
      const resumed = yield* fetchJson(
        `${url}/workflows/inner-suspend/executions/${run.body.data.executionId}/resume`,
        json({ resumeData: { go: true } })
      )
      expect(resumed.body.data).toMatchObject({ status: "completed", result: [1, 2] })
    }))
})
