import { describe, expect, it } from "@effect/vitest"
import { Context, Effect } from "effect"
import type { WorkflowEvent } from "../src/workflows/api/WorkflowSchemas.js"
import { ExecutionStore } from "../src/workflows/execution/ExecutionStore.js"
import { testExecution } from "./support/executions.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * GET /workflows/:id/executions/:executionId/events pages through every event of an execution, inner
 * steps' included; a listing shows the top-level ones only (issue #31: a 10,000-item loop's events
 * would otherwise make every listing page huge).
 */
const layer = TestServerLive()

const event = (
  executionId: string,
  type: WorkflowEvent["type"],
  from: string,
  at: number,
  path?: string
): WorkflowEvent => ({
  type,
  executionId,
  from,
  timestamp: new Date(Date.parse("2026-11-01T00:00:00.000Z") + at).toISOString(),
  status: "running",
  ...(path === undefined ? {} : { path })
})

describe("an execution's events by page", () => {
  it.layer(layer, { timeout: 60_000 })((it) => {
    it.effect("pages through every event with `after` and `limit`; nextAfter is null on the last page", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const started = yield* fetchJson(
          `${url}/workflows/pipeline/execute`,
          json({ input: { text: " paged ", n: 2 } })
        )
        expect(started.status).toBe(200)
        const executionId = started.body.data.executionId
        const all = yield* fetchJson(`${url}/workflows/pipeline/executions/${executionId}/events?limit=1000`)
        expect(all.status).toBe(200)
        const types: Array<string> = all.body.data.events.map((e: { type: string }) => e.type)
        expect(types[0]).toBe("workflow-start")
        expect(types.at(-1)).toBe("workflow-complete")
        expect(all.body.data.nextAfter).toBeNull()

        const paged: Array<string> = []
        let after = 0
        for (let pages = 0; pages < 100; pages++) {
          const page = yield* fetchJson(
            `${url}/workflows/pipeline/executions/${executionId}/events?after=${after}&limit=3`
          )
          expect(page.body.data.events.length).toBeLessThanOrEqual(3)
          paged.push(...page.body.data.events.map((e: { id: string }) => e.id))
          if (page.body.data.nextAfter === null) break
          after = page.body.data.nextAfter
        }
        expect(paged).toEqual(all.body.data.events.map((e: { id: string }) => e.id))
        expect(paged).toEqual(types.map((_, i) => String(i + 1)))
      }))

    it.effect("bad paging is a 400 with the parameter named; another workflow's or an unknown execution is a 404", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const started = yield* fetchJson(`${url}/workflows/pipeline/execute`, json({ input: { text: "x", n: 1 } }))
        const executionId = started.body.data.executionId
        for (const query of ["limit=abc", "after=-1", "limit=1.5"]) {
          const bad = yield* fetchJson(`${url}/workflows/pipeline/executions/${executionId}/events?${query}`)
          expect(bad.status, query).toBe(400)
          expect(bad.body.success).toBe(false)
          expect(JSON.stringify(bad.body.error), query).toMatch(/limit|after/)
        }
        expect((yield* fetchJson(`${url}/workflows/pipeline/executions/nope/events`)).status).toBe(404)
        expect((yield* fetchJson(`${url}/workflows/approval/executions/${executionId}/events`)).status).toBe(404)
      }))

    it.effect("a listing shows top-level events only; the page shows the inner ones with their path", () =>
      Effect.gen(function*() {
        const { services, url } = yield* TestServer
        const store = Context.get(services, ExecutionStore)
        const id = `with-inner-${crypto.randomUUID()}`
        const at = "2026-11-01T00:00:00.000Z"
        const events = [
          event(id, "workflow-start", "Data pipeline", 0),
          event(id, "step-start", "fan", 1),
          event(id, "step-start", "each", 2, "fan[0]"),
          event(id, "step-complete", "each", 3, "fan[0]"),
          event(id, "step-start", "each", 4, "fan[1]")
        ]
        const created = yield* store.create(
          testExecution(id, {
            workflowId: "pipeline",
            workflowName: "Data pipeline",
            status: "suspended",
            createdAt: at,
            updatedAt: at
          }),
          events
        )
        expect(created._tag).toBe("Some")
        const listed = yield* fetchJson(`${url}/workflows/executions?workflowId=pipeline&status=suspended`)
        const record = listed.body.data.find((r: { id: string }) => r.id === id)
        expect(record.events.map((e: { id: string }) => e.id)).toEqual(["1", "2"])
        const page = yield* fetchJson(`${url}/workflows/pipeline/executions/${id}/events`)
        expect(page.body.data.events.map((e: { id: string; path?: string }) => [e.id, e.path])).toEqual([
          ["1", undefined],
          ["2", undefined],
          ["3", "fan[0]"],
          ["4", "fan[0]"],
          ["5", "fan[1]"]
        ])
      }))
  })
})
