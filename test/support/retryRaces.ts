import { expect, type Vitest } from "@effect/vitest"
import { Data, Effect, Schedule, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { fetchJson, json, TestServer } from "./TestServer.js"

/**
 * Issue #31: a retry's commit (the attempt state and its step-retry event) is fenced by the claim like
 * every other write of a drive fiber. Cancel and suspend race retries that commit every few
 * milliseconds; the logs must stay well formed and nothing may be written after the final event.
 */

const TRIALS = 100
const BATCH = 20

class Busy extends Data.TaggedError("Busy")<{ readonly attempt: number }> {}

/** The attempts each execution made, for the test to read (the server runs in this process). */
export const attemptsMade = new Map<string, number>()

const retrying = workflow({
  id: "retrying",
  name: "Retrying",
  purpose: "Fails its first 20 attempts, 2 ms apart",
  input: Schema.Struct({}),
  result: Schema.Number
}).andThen({
  id: "busy",
  execute: ({ attempt, executionId }) => {
    attemptsMade.set(executionId, attempt)
    return attempt <= 20 ? Effect.fail(new Busy({ attempt })) : Effect.succeed(attempt)
  },
  retry: { schedule: Schedule.spaced("2 millis") }
})

export const app = defineApp({ workflows: [retrying] })

type EventRecord = { readonly id: string; readonly type: string; readonly attempt?: number }

const recordsOf = (url: string) =>
  Effect.gen(function*() {
    const byId = new Map<string, { status: string; events: ReadonlyArray<EventRecord> }>()
    for (let offset = 0;; offset += 500) {
      const page = yield* fetchJson(`${url}/workflows/executions?workflowId=retrying&limit=500&offset=${offset}`)
      for (const execution of page.body.data) {
        byId.set(execution.id, { status: execution.status, events: execution.events })
      }
      if (page.body.data.length < 500) {
        return byId
      }
    }
  })

const FINAL = ["workflow-complete", "workflow-error", "workflow-cancelled"]

const wellFormed = (events: ReadonlyArray<EventRecord>) => {
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1))
  expect(events.filter((e) => FINAL.includes(e.type) || e.type === "workflow-suspended").length).toBeLessThanOrEqual(1)
  const retries = events.filter((e) => e.type === "step-retry").map((e) => e.attempt)
  // Each retry committed once, in order.
  expect(retries).toEqual(retries.map((_, i) => i + 1))
}

export const retryRaces = (backend: string) => (it: Vitest.MethodsNonLive<TestServer, true>) => {
  it.effect(
    `cancel and suspend vs a retrying step: one outcome, no retry after it, nothing written late (${TRIALS} trials each)`,
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const trials = yield* Effect.forEach(Array.from({ length: 2 * TRIALS }, (_, i) => i), (i) =>
          Effect.gen(function*() {
            const executionId = `${backend}-retry-${i}`
            const action = i % 2 === 0 ? "cancel" : "suspend"
            yield* fetchJson(`${url}/workflows/retrying/run`, json({ input: {}, options: { executionId } }))
            // At a varying point of the retries.
            yield* Effect.sleep(`${i % 15} millis`)
            const answer = yield* fetchJson(`${url}/workflows/retrying/executions/${executionId}/${action}`, json({}))
            return { executionId, action, answer }
          }), { concurrency: BATCH })
        // Every execution settles (a completed one finished its 21 attempts first).
        const deadline = Date.now() + 60_000
        let stored = yield* recordsOf(url)
        while (
          [...stored.values()].some((r) =>
            r.status === "running"
          ) && Date.now() < deadline
        ) {
          yield* Effect.sleep("100 millis")
          stored = yield* recordsOf(url)
        }
        for (const { action, answer, executionId } of trials) {
          const { events, status } = stored.get(executionId)!
          wellFormed(events)
          if (answer.status === 200) {
            expect(status).toBe(action === "cancel" ? "cancelled" : "suspended")
            expect(events.at(-1)!.type).toBe(action === "cancel" ? "workflow-cancelled" : "workflow-suspended")
          } else {
            expect(answer.status).toBe(400)
            expect(status).toBe("completed")
          }
        }
        // Fibers that lost their claim wrote nothing afterwards, and made no further attempt.
        const attempts = new Map(attemptsMade)
        yield* Effect.sleep("200 millis")
        expect(yield* recordsOf(url)).toEqual(stored)
        expect(new Map(attemptsMade)).toEqual(attempts)
      }),
    180_000
  )
}
