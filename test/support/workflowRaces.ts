import { expect, type Vitest } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { approval, slow } from "../../src/examples/workflows.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { fetchJson, json, TestServer } from "./TestServer.js"

/**
 * Races of transitions on one execution, over real HTTP, on SQLite and on Postgres. Every trial checks
 * the answers against the stored row and the stored event log: one winner, no 500, events numbered
 * 1..n, and nothing (no step) after the execution's final event.
 */

const TRIALS = 200
const BATCH = 25

/** Executions whose `work` step has begun (the server runs in this process). */
const workStarted = new Set<string>()

/** Suspends at `gate`; after the resume, `work` takes a few milliseconds. */
const gated = workflow({
  id: "gated",
  name: "Gated",
  purpose: "Suspends, then works a few milliseconds after the resume",
  input: Schema.Struct({}),
  result: Schema.Struct({ done: Schema.Boolean })
})
  .andThen({
    id: "gate",
    execute: ({ resumeData, suspend }) => (resumeData === undefined ? suspend("waiting for the gate") : {})
  })
  .andThen({
    id: "work",
    execute: ({ executionId }) =>
      Effect.zipRight(
        Effect.sync(() => workStarted.add(executionId)),
        Effect.as(Effect.sleep("3 millis"), { done: true })
      )
  })

export const app = defineApp({ workflows: [approval, slow, gated] })

type Answer = { readonly status: number; readonly body: any }
type EventRecord = { readonly id: string; readonly type: string; readonly from: string }

export const post = (url: string, body: unknown = {}) => fetchJson(url, json(body)) as Effect.Effect<Answer>

/** Every stored execution of a workflow with its events, read through the list endpoint. */
const executionsOf = (url: string, workflowId: string) =>
  Effect.gen(function*() {
    const byId = new Map<string, { status: string; events: ReadonlyArray<EventRecord> }>()
    for (let offset = 0;; offset += 500) {
      const page = yield* fetchJson(`${url}/workflows/executions?workflowId=${workflowId}&limit=500&offset=${offset}`)
      for (const execution of page.body.data) {
        byId.set(execution.id, { status: execution.status, events: execution.events })
      }
      if (page.body.data.length < 500) {
        return byId
      }
    }
  })

/** The log of an ended execution: numbered 1..n, one final event, which is the last. */
const expectWellFormed = (events: ReadonlyArray<EventRecord>, final: string) => {
  expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1))
  expect(events[0].type).toBe("workflow-start")
  expect(events.at(-1)!.type).toBe(final)
  expect(events.filter((e) => ["workflow-complete", "workflow-error", "workflow-cancelled"].includes(e.type)))
    .toHaveLength(1)
}

const inBatches = <A>(count: number, trial: (i: number) => Effect.Effect<A>) =>
  Effect.forEach(Array.from({ length: count }, (_, i) => i), trial, { concurrency: BATCH })

export const races = (backend: string) => (it: Vitest.MethodsNonLive<TestServer, true>) => {
  it.effect(
    `resume vs cancel of a suspended approval: one winner, no 500, no step after the cancel (${TRIALS} trials)`,
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const trials = yield* inBatches(TRIALS, (i) =>
          Effect.gen(function*() {
            const executionId = `${backend}-approval-${i}`
            const started = yield* post(`${url}/workflows/approval/execute`, {
              input: { amount: 500 },
              options: { executionId }
            })
            expect(started.body.data?.status).toBe("suspended")
            const base = `${url}/workflows/approval/executions/${executionId}`
            const [resume, cancel] = yield* Effect.all([
              post(`${base}/resume`, { resumeData: { approved: true } }),
              post(`${base}/cancel`)
            ], {
              concurrency: 2
            })
            return { executionId, resume, cancel }
          }))
        const stored = yield* executionsOf(url, "approval")
        const outcomes = new Set<string>()
        for (const { cancel, executionId, resume } of trials) {
          const { events, status } = stored.get(executionId)!
          if (cancel.status === 200) {
            expect(status).toBe("cancelled")
            expect([404, 200]).toContain(resume.status)
            if (resume.status === 200) expect(resume.body.data.status).toBe("cancelled")
            else expect(resume.body.error).toBe(`Execution ${executionId} is not suspended (it is cancelled)`)
            expectWellFormed(events, "workflow-cancelled")
          } else {
            expect(cancel).toMatchObject({
              status: 400,
              body: { success: false, error: `Execution ${executionId} is completed` }
            })
            expect(resume.body.data).toMatchObject({ status: "completed", result: { approved: true, amount: 500 } })
            expect(status).toBe("completed")
            expectWellFormed(events, "workflow-complete")
          }
          outcomes.add(`${resume.status}/${cancel.status}`)
        }
        // Nothing is written late by a fiber that lost the race.
        expect(yield* executionsOf(url, "approval")).toEqual(stored)
        expect([...outcomes].every((o) => ["404/200", "200/200", "200/400"].includes(o))).toBe(true)
      }),
    120_000
  )

  it.effect(
    `resume vs cancel when the resumed step takes a few ms: a step never begins after the cancel (${TRIALS} trials)`,
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const trials = yield* inBatches(TRIALS, (i) =>
          Effect.gen(function*() {
            const executionId = `${backend}-gated-${i}`
            const started = yield* post(`${url}/workflows/gated/execute`, { input: {}, options: { executionId } })
            expect(started.body.data?.status).toBe("suspended")
            const base = `${url}/workflows/gated/executions/${executionId}`
            const [resume, cancel] = yield* Effect.all([
              post(`${base}/resume`, { resumeData: {} }),
              post(`${base}/cancel`)
            ], { concurrency: 2 })
            return { executionId, resume, cancel }
          }))
        const stored = yield* executionsOf(url, "gated")
        for (const { cancel, executionId, resume } of trials) {
          const { events, status } = stored.get(executionId)!
          expect([200, 404]).toContain(resume.status)
          if (resume.status === 404) {
            expect(resume.body.error).toBe(`Execution ${executionId} is not suspended (it is cancelled)`)
          }
          expect([200, 400]).toContain(cancel.status)
          expect(status).toBe(cancel.status === 200 ? "cancelled" : "completed")
          expectWellFormed(events, cancel.status === 200 ? "workflow-cancelled" : "workflow-complete")
          // `work` began only if its step-start was stored, and that was before the final event.
          const workRecorded = events.some((e) => e.type === "step-start" && e.from === "work")
          expect(workStarted.has(executionId)).toBe(workRecorded)
        }
        expect(yield* executionsOf(url, "gated")).toEqual(stored)
      }),
    120_000
  )

  it.effect(
    "cancel vs cancel (suspended and running) and suspend vs cancel (running): one cancel wins, logs stay well formed",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const twoCancels = yield* inBatches(50, (i) =>
          Effect.gen(function*() {
            const executionId = `${backend}-cc-${i}`
            const running = i % 2 === 0
            const base = `${url}/workflows/${running ? "slow" : "approval"}/executions/${executionId}`
            if (running) yield* post(`${url}/workflows/slow/run`, { input: { ms: 60_000 }, options: { executionId } })
            else yield* post(`${url}/workflows/approval/execute`, { input: { amount: 500 }, options: { executionId } })
            const answers = yield* Effect.all([post(`${base}/cancel`), post(`${base}/cancel`)], { concurrency: 2 })
            expect(answers.map((a) => a.status).sort()).toEqual([200, 400])
            expect(answers.find((a) => a.status === 400)!.body.error).toBe(`Execution ${executionId} is cancelled`)
            return executionId
          }))
        const suspendCancel = yield* inBatches(50, (i) =>
          Effect.gen(function*() {
            const executionId = `${backend}-sc-${i}`
            yield* post(`${url}/workflows/slow/run`, { input: { ms: 60_000 }, options: { executionId } })
            const base = `${url}/workflows/slow/executions/${executionId}`
            const [suspend, cancel] = yield* Effect.all([post(`${base}/suspend`), post(`${base}/cancel`)], {
              concurrency: 2
            })
            expect(cancel.status).toBe(200)
            if (suspend.status !== 200) expect(suspend.body.error).toBe(`Execution ${executionId} is cancelled`)
            return executionId
          }))
        const stored = new Map([...(yield* executionsOf(url, "slow")), ...(yield* executionsOf(url, "approval"))])
        for (const executionId of [...twoCancels, ...suspendCancel]) {
          const { events, status } = stored.get(executionId)!
          expect(status).toBe("cancelled")
          expectWellFormed(events, "workflow-cancelled")
          expect(events.filter((e) => e.type === "workflow-suspended").length).toBeLessThanOrEqual(1)
        }
      }),
    120_000
  )
}
