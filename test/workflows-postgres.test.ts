import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, json, makeClient, TestServer } from "./support/TestServer.js"

describe.skipIf(!postgresAvailable)("workflows on Postgres", () => {
  layer(PostgresTestServerLive(), { excludeTestServices: true })("DATABASE_URL=postgres://...", (it) => {
    it.effect(
      "runs, suspends and resumes; two concurrent resumes have exactly one winner (20 trials)",
      () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const client = yield* makeClient
          const pipeline = yield* client.workflows.executeWorkflow({
            path: { id: "pipeline" },
            headers: {},
            payload: { input: { text: " hi ", n: 21 } }
          })
          expect(pipeline.result).toEqual({ text: "hi", upper: "HI", length: 2, doubled: 42, winner: "fast" })
          for (let trial = 0; trial < 20; trial++) {
            const started = yield* client.workflows.executeWorkflow({
              path: { id: "approval" },
              headers: {},
              payload: { input: { amount: 999 } }
            })
            expect(started.status).toBe("suspended")
            const resume = `${url}/workflows/approval/executions/${started.executionId}/resume`
            const [a, b] = yield* Effect.all(
              [
                fetchJson(resume, json({ resumeData: { approved: true } })),
                fetchJson(resume, json({ resumeData: { approved: true } }))
              ],
              { concurrency: 2 }
            )
            expect([a.status, b.status].sort()).toEqual([200, 404])
          }
          const listed = yield* client.workflows.listExecutions({
            urlParams: { workflowId: "approval", status: "completed" }
          })
          expect(listed).toHaveLength(20)
          expect(listed[0].events.at(-1)?.type).toBe("workflow-complete")
        }),
      60_000
    )
  })
})
