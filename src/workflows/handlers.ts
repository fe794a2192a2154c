import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Stream } from "effect"
import { CurrentUser } from "../auth/Authentication.js"
import { ServiceApi } from "../http/Api.js"
import { toIso } from "../http/Query.js"
import { type SseFrame, sseResponse } from "../http/sse.js"
import type { ExecutionUpdate } from "./ExecutionViews.js"
import { callerOf, IdempotencyKeys, type StartRoute } from "./IdempotencyKeys.js"
import { type StartOptions, WorkflowEngine } from "./WorkflowEngine.js"
import type { ExecuteRequest } from "./WorkflowSchemas.js"

const LIST_DEFAULT = 50
const LIST_MAX = 500

/** Each event (and the closing result) of an execution is one SSE frame, its id the event's number. */
const asSse = <E>(updates: Stream.Stream<ExecutionUpdate, E>) =>
  sseResponse(Stream.map(updates, (update): SseFrame => ({ id: update.seq, data: update.event })))

const lastEventId = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const header = Number(request.headers["last-event-id"])
  return Number.isInteger(header) && header >= 0 ? header : 0
})

export const WorkflowsHandlers = HttpApiBuilder.group(ServiceApi, "workflows", (handlers) =>
  Effect.gen(function*() {
    const engine = yield* WorkflowEngine
    const keys = yield* IdempotencyKeys

    /** The caller, and the Idempotency-Key's scope when the request has one. */
    const startOptions = (
      route: StartRoute,
      workflowId: string,
      payload: ExecuteRequest,
      key: string | undefined
    ): Effect.Effect<StartOptions, never, CurrentUser> =>
      Effect.map(CurrentUser, (user) => ({
        user,
        ...(key === undefined
          ? {}
          : { idempotent: keys.forStart({ route, workflowId, caller: callerOf(user), key }, payload) })
      }))

    return handlers
      .handle("listWorkflows", () => engine.list)
      .handle("listExecutions", ({ urlParams }) =>
        engine.executions({
          workflowId: urlParams.workflowId,
          status: urlParams.status,
          from: toIso(urlParams.from),
          to: toIso(urlParams.to),
          limit: Math.min(urlParams.limit ?? LIST_DEFAULT, LIST_MAX),
          offset: urlParams.offset ?? 0
        }))
      .handle("getWorkflow", ({ path }) => engine.details(path.id))
      .handle("executeWorkflow", ({ headers, path, payload }) =>
        Effect.flatMap(startOptions("execute", path.id, payload, headers["idempotency-key"]), (options) =>
          engine.execute(path.id, payload, options)))
      .handle("runWorkflow", ({ headers, path, payload }) =>
        Effect.flatMap(startOptions("run", path.id, payload, headers["idempotency-key"]), (options) =>
          engine.run(path.id, payload, options)))
      .handle("streamWorkflow", ({ headers, path, payload }) =>
        startOptions("stream", path.id, payload, headers["idempotency-key"]).pipe(
          Effect.flatMap((options) => engine.stream(path.id, payload, options)),
          Effect.flatMap(asSse)
        ))
      .handle("suspendExecution", ({ path, payload }) =>
        engine.suspend(path.id, path.executionId, payload.reason ?? "Suspended by request"))
      .handle("resumeExecution", ({ path, payload }) =>
        engine.resume(path.id, path.executionId, payload.resumeData, payload.options?.stepId))
      .handle("cancelExecution", ({ path, payload }) =>
        engine.cancel(path.id, path.executionId, payload.reason ?? "Cancelled by request"))
      .handle("deleteExecution", ({ path }) => engine.remove(path.id, path.executionId))
      .handle("executionState", ({ path }) => engine.state(path.id, path.executionId))
      .handle("attachExecution", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const after = urlParams.after ?? (yield* lastEventId)
          return yield* Effect.flatMap(engine.attach(path.id, path.executionId, after), asSse)
        }))
  }))
