import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Redacted } from "effect"
import { defineApp } from "../../src/App.js"
import { resolveServerConfig } from "../../src/config/ServerConfig.js"
import type { WorkflowDefinition } from "../../src/workflows/definition/Workflow.js"
import { fetchJson, TestServer, TestServerLive } from "./TestServer.js"

/** Services started one after another on one database (a release, a restart): each a fresh engine with nothing in memory. */

let instances = 0
/** The service with these workflows on `databaseUrl`, for the length of `use`; shut down afterwards. */
export const withService = <A, E>(
  databaseUrl: string,
  workflows: ReadonlyArray<WorkflowDefinition>,
  use: (url: string, sql: SqlClient.SqlClient) => Effect.Effect<A, E>
) =>
  Effect.scoped(Effect.gen(function*() {
    const defaults = resolveServerConfig({}, {})
    const server = TestServerLive({
      app: defineApp({ workflows }),
      config: {
        databaseUrl: Redacted.make(databaseUrl),
        instanceId: `service-on-database-${++instances}`,
        workflows: { ...defaults.workflows, drainMs: 50 }
      }
    })
    const { services, url } = Context.get(yield* Layer.build(server), TestServer)
    return yield* use(url, Context.get(services, SqlClient.SqlClient))
  }))

export const stateOf = (url: string, workflowId: string, executionId: string) =>
  Effect.map(
    fetchJson(`${url}/workflows/${workflowId}/executions/${executionId}/state`),
    (response) => response.body.data
  )

/** Polls the execution's state until it is no longer running (generous deadline). */
export const settled = (url: string, workflowId: string, executionId: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    let state = yield* stateOf(url, workflowId, executionId)
    while (state.status === "running" && Date.now() < deadline) {
      yield* Effect.sleep("50 millis")
      state = yield* stateOf(url, workflowId, executionId)
    }
    return state
  })

/** The execution's events, from the listing. */
export const eventsOf = (url: string, workflowId: string, executionId: string) =>
  Effect.map(
    fetchJson(`${url}/workflows/executions?workflowId=${workflowId}`),
    (listed): Array<any> => listed.body.data.find((e: any) => e.id === executionId)?.events ?? []
  )

/** Polls until the execution has started `stepId`. */
export const startedStep = (url: string, workflowId: string, executionId: string, stepId: string) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline) {
      const events = yield* eventsOf(url, workflowId, executionId)
      if (events.some((event) => event.type === "step-start" && event.from === stepId)) return
      yield* Effect.sleep("50 millis")
    }
    throw new Error(`${executionId} never started ${stepId}`)
  })
