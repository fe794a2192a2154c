import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Stream } from "effect"
import { ServiceApi } from "../../Api.js"
import { CurrentCaller } from "../../auth/Authentication.js"
import { actingUserId } from "../../auth/Ownership.js"
import type { BadRequest, Forbidden } from "../../core/errors.js"
import { tooManyRequestsResponse } from "../../http/Errors.js"
import { fixedJsonResponse } from "../../http/fixedResponse.js"
import { streamedJsonResponse } from "../../http/jsonStream.js"
import { pageOf } from "../../http/Query.js"
import { encodeEvent, jsonEvent, sseFramesResponse } from "../../http/sse.js"
import { Webhooks } from "../../webhooks/Webhooks.js"
import { type StartOptions, WorkflowEngine } from "../engine/WorkflowEngine.js"
import { isParkedAnswer } from "../execution/ExecuteWait.js"
import type { ExecutionUpdate } from "../execution/ExecutionViews.js"
import { callerOf, IdempotencyKeys, type StartRoute } from "../execution/IdempotencyKeys.js"
import { ParkedAnswer } from "./WorkflowsApi.js"
import type { ExecuteRequest, ExecutionResult } from "./WorkflowSchemas.js"

const EVENTS_DEFAULT = 100
const EVENTS_MAX = 1000
/** A record read refused for the caller's reads in flight: most records are sent within a second. */
const RECORD_RETRY_AFTER_SECONDS = 1

/**
 * Each event (and the closing result) of an execution is one SSE frame, its id the event's number,
 * encoded when the response asks for it (a reader holds one page of events and the frame being sent).
 */
const asSse = <E>(updates: Stream.Stream<ExecutionUpdate, E>) =>
  sseFramesResponse(Stream.map(updates, (update) => encodeEvent(jsonEvent(update.event, update.seq))))

const lastEventId = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const header = Number(request.headers["last-event-id"])
  return Number.isInteger(header) && header >= 0 ? header : 0
})

export const WorkflowsHandlers = HttpApiBuilder.group(ServiceApi, "workflows", (handlers) =>
  Effect.gen(function*() {
    const engine = yield* WorkflowEngine
    const keys = yield* IdempotencyKeys
    const webhooks = yield* Webhooks

    /** The caller (whom the execution belongs to), and the Idempotency-Key's scope when the request has one. */
    const startOptions = (
      route: StartRoute,
      workflowId: string,
      payload: ExecuteRequest,
      key: string | undefined
    ): Effect.Effect<StartOptions, Forbidden | BadRequest, CurrentCaller> =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const userId = yield* actingUserId(caller, payload.options?.userId)
        // A callback's URL and its owner's secret are checked before anything is stored (issue #33).
        if (payload.options?.webhook !== undefined) yield* webhooks.checkStart(payload.options.webhook.url, caller)
        const user = caller.user
        return {
          user,
          userId,
          ...(key === undefined
            ? {}
            : { idempotent: keys.forStart({ route, workflowId, caller: callerOf(user), key }, payload) })
        }
      })

    /** A replay or restart is the caller's (settled 11), keyed like a start; the key's body names the original. */
    const replayOptions = (
      route: "replay" | "restart",
      path: { readonly id: string; readonly executionId: string },
      body: unknown,
      key: string | undefined
    ): Effect.Effect<StartOptions, Forbidden, CurrentCaller> =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const userId = yield* actingUserId(caller, undefined)
        const scope = { route, workflowId: path.id, caller: callerOf(caller.user), key: key ?? "" }
        return {
          user: caller.user,
          userId,
          ...(key === undefined ? {} : { idempotent: keys.forReplay(scope, { executionId: path.executionId, body }) })
        }
      })

    /** Whose executions the caller may see and change. */
    const visibility = Effect.map(CurrentCaller, (caller) => caller.visibility)

    return handlers
      .handle("listWorkflows", () => engine.list)
      .handle("listExecutions", ({ urlParams }) =>
        Effect.flatMap(visibility, (seen) =>
          engine.executions({
            ...(seen.all ? {} : { userId: seen.userId }),
            workflowId: urlParams.workflowId,
            status: urlParams.status,
            waiting: urlParams.waiting,
            from: urlParams.from,
            to: urlParams.to,
            ...pageOf(urlParams)
          })))
      .handle("getExecutionRecord", ({ path }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentCaller
          // A HEAD is routed here too, and the server never reads its body: its slot is given back at once.
          const head = (yield* HttpServerRequest.HttpServerRequest).method === "HEAD"
          // Whose reads count together: the caller's own id (with authentication off, every caller is one).
          return yield* engine.record(path.executionId, caller.visibility, caller.userId ?? "").pipe(
            Effect.flatMap((read) =>
              head
                ? Effect.as(
                  read.release,
                  HttpServerResponse.empty({ status: 200, headers: { "content-type": "application/json" } })
                )
                : streamedJsonResponse(read.record, "events", read.events)
            ),
            Effect.catchTag(
              "TooManyRequests",
              (busy) => Effect.succeed(tooManyRequestsResponse(busy, RECORD_RETRY_AFTER_SECONDS))
            )
          )
        }))
      .handle("getWorkflow", ({ path }) => engine.details(path.id))
      .handle("executeWorkflow", ({ headers, path, payload }) =>
        Effect.flatMap(startOptions("execute", path.id, payload, headers["idempotency-key"]), (options) =>
          Effect.flatMap(
            engine.execute(path.id, payload, { ...options, wait: payload.options?.wait ?? "bounded" }),
            (answer): Effect.Effect<ExecutionResult | HttpServerResponse.HttpServerResponse> =>
              isParkedAnswer(answer) ? fixedJsonResponse(ParkedAnswer, answer) : Effect.succeed(answer)
          )))
      .handle("runWorkflow", ({ headers, path, payload }) =>
        Effect.flatMap(startOptions("run", path.id, payload, headers["idempotency-key"]), (options) =>
          engine.run(path.id, payload, options)))
      .handle("streamWorkflow", ({ headers, path, payload }) =>
        startOptions("stream", path.id, payload, headers["idempotency-key"]).pipe(
          Effect.flatMap((options) =>
            engine.stream(path.id, payload, options)
          ),
          Effect.flatMap(asSse)
        ))
      .handle("suspendExecution", ({ path, payload }) =>
        Effect.flatMap(visibility, (seen) =>
          engine.suspend(path.id, path.executionId, payload.reason ?? "Suspended by request", seen)))
      .handle("resumeExecution", ({ path, payload }) =>
        Effect.flatMap(visibility, (seen) =>
          engine.resume(path.id, path.executionId, payload.resumeData, payload.options?.stepId, seen)))
      .handle("replayExecution", ({ headers, path, payload }) =>
        Effect.gen(function*() {
          const options = yield* replayOptions("replay", path, payload, headers["idempotency-key"])
          return yield* engine.replay(path.id, path.executionId, payload, options, yield* visibility)
        }))
      .handle("restartExecution", ({ headers, path }) =>
        Effect.gen(function*() {
          const options = yield* replayOptions("restart", path, {}, headers["idempotency-key"])
          return yield* engine.restart(path.id, path.executionId, options, yield* visibility)
        }))
      .handle("cancelExecution", ({ path, payload }) =>
        Effect.flatMap(visibility, (seen) =>
          engine.cancel(path.id, path.executionId, payload.reason ?? "Cancelled by request", seen)))
      .handle("deleteExecution", ({ path }) =>
        Effect.flatMap(visibility, (seen) =>
          engine.remove(path.id, path.executionId, seen)))
      .handle("executionEvents", ({ path, urlParams }) =>
        Effect.flatMap(visibility, (seen) =>
          engine.events(path.id, path.executionId, {
            afterSeq: urlParams.after ?? 0,
            limit: Math.max(1, Math.min(urlParams.limit ?? EVENTS_DEFAULT, EVENTS_MAX))
          }, seen)))
      .handle("executionState", ({ path }) =>
        Effect.flatMap(visibility, (seen) =>
          engine.state(path.id, path.executionId, seen)))
      .handle("attachExecution", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const after = urlParams.after ?? (yield* lastEventId)
          const seen = yield* visibility
          return yield* Effect.flatMap(engine.attach(path.id, path.executionId, after, seen), asSse)
        }))
  }))
