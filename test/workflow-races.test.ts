import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Redacted } from "effect"
import { WorkflowEngine } from "../src/workflows/engine/WorkflowEngine.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"
import { app, post, races } from "./support/workflowRaces.js"

/** Polls `check` until it holds; fails after the deadline. */
const eventually = <A>(read: Effect.Effect<A>, check: (value: A) => boolean, what: string, deadlineMs = 15_000) =>
  Effect.gen(function*() {
    const until = Date.now() + deadlineMs
    for (;;) {
      const value = yield* read
      if (check(value)) return value
      if (Date.now() > until) return yield* Effect.die(new Error(`${what}: still ${JSON.stringify(value)}`))
      yield* Effect.sleep("50 millis")
    }
  })

layer(TestServerLive({ app }), { excludeTestServices: true })("workflow races on SQLite", (it) => {
  races("sqlite")(it)

  it.effect(
    "a store failure mid-execution: execute and stream answer promptly (500 / a final frame), the service keeps serving",
    () =>
      Effect.gen(function*() {
        const { config, url } = yield* TestServer
        // A real failure of the store: from its third event on (the step's checkpoint, then the error
        // the failure path tries to record), the database refuses this execution's events.
        yield* Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe(`CREATE TRIGGER fail_broken BEFORE INSERT ON workflow_events
          WHEN NEW.execution_id LIKE 'broken-%' AND NEW.seq >= 3 BEGIN SELECT RAISE(ABORT, 'injected store failure'); END`)
        }).pipe(
          Effect.provide(SqliteClient.layer({ filename: Redacted.value(config.databaseUrl).replace(/^file:/, "") })),
          Effect.orDie
        )
        const broken = yield* fetchJson(`${url}/workflows/slow/execute`, {
          ...json({ input: { ms: 1 }, options: { executionId: "broken-execute" } }),
          signal: AbortSignal.timeout(20_000)
        })
        expect(broken).toMatchObject({ status: 500, body: { success: false, error: "Internal server error" } })
        const state = yield* fetchJson(`${url}/workflows/slow/executions/broken-execute/state`)
        expect(["running", "error"]).toContain(state.body.data.status)

        const stream = yield* Effect.promise(() =>
          fetch(`${url}/workflows/slow/stream`, {
            ...json({ input: { ms: 1 }, options: { executionId: "broken-stream" } }),
            signal: AbortSignal.timeout(20_000)
          }).then((r) => r.text())
        )
        expect(stream).toContain("\"type\":\"workflow-start\"")
        expect(stream).toContain("\"type\":\"workflow-result\"")

        const healthy = yield* post(`${url}/workflows/slow/execute`, { input: { ms: 1 } })
        expect(healthy.body.data).toMatchObject({ status: "completed", result: { waitedMs: 1 } })
      }),
    60_000
  )

  it.effect(
    "event hubs do not outlive their listeners: none left after executions suspend, complete and are cancelled",
    () =>
      Effect.gen(function*() {
        const { services, url } = yield* TestServer
        const engine = Context.get(services, WorkflowEngine)
        const ids = Array.from({ length: 12 }, (_, i) => `hubs-${i}`)
        // Suspended with a listener (execute), without one (run), and followed over SSE.
        yield* Effect.forEach(ids, (executionId, i) => {
          const body = { input: { amount: 500 }, options: { executionId } }
          return i % 3 === 0
            ? post(`${url}/workflows/approval/execute`, body)
            : i % 3 === 1
            ? post(`${url}/workflows/approval/run`, body)
            : Effect.promise(() =>
              fetch(`${url}/workflows/approval/stream`, json(body)).then(async (r) => ({
                status: r.status,
                body: await r.text()
              }))
            )
        }, { concurrency: 4 })
        for (const executionId of ids) {
          yield* eventually(
            fetchJson(`${url}/workflows/approval/executions/${executionId}/state`),
            (state) => state.body.data.status === "suspended",
            `${executionId} suspended`
          )
        }
        yield* eventually(engine.liveEventHubs, (n) => n === 0, "no hub left once every execution is suspended")

        // A listener that is there while the execution runs, then leaves (the client goes away).
        yield* post(`${url}/workflows/slow/run`, { input: { ms: 60_000 }, options: { executionId: "hubs-slow" } })
        const controller = new AbortController()
        const attached = yield* Effect.promise(() =>
          fetch(`${url}/workflows/slow/executions/hubs-slow/stream`, { signal: controller.signal })
        )
        expect(attached.status).toBe(200)
        yield* eventually(engine.liveEventHubs, (n) => n === 1, "one hub while a client follows")
        controller.abort()
        yield* eventually(engine.liveEventHubs, (n) => n === 0, "no hub once the client has gone")
        yield* post(`${url}/workflows/slow/executions/hubs-slow/cancel`)

        // Resumed to completion (the resume listens meanwhile) and one cancelled while suspended.
        yield* Effect.forEach(
          ids.slice(1),
          (executionId) =>
            post(`${url}/workflows/approval/executions/${executionId}/resume`, { resumeData: { approved: true } }),
          { concurrency: 4 }
        )
        yield* post(`${url}/workflows/approval/executions/${ids[0]}/cancel`)
        yield* eventually(engine.liveEventHubs, (n) => n === 0, "no hub left")
      }),
    60_000
  )
})
