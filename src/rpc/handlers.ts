import { Effect, Stream } from "effect"
import { AgentRegistry } from "../agents/AgentRegistry.js"
import { withUser } from "../agents/handlers.js"
import { CurrentCaller } from "../auth/Authentication.js"
import { actingUserId } from "../auth/Ownership.js"
import { ExecutionFailed, messageOf } from "../core/errors.js"
import { logLimit } from "../http/Limits.js"
import { followLogs } from "../observability/logFollow.js"
import { LogStore } from "../observability/LogStore.js"
import { Webhooks } from "../webhooks/Webhooks.js"
import { WorkflowEngine } from "../workflows/engine/WorkflowEngine.js"
import { callerOf, IdempotencyKeys } from "../workflows/execution/IdempotencyKeys.js"
import { type LogFeedMessage, ServiceRpcs } from "./RpcContract.js"

/** Live log entries are sent in chunks of at most this many (each chunk waits for the client's ack). */
const LOG_CHUNK = 64

/** The procedures of `ServiceRpcs`, each calling the same service as its HTTP twin. */
export const RpcHandlersLive = ServiceRpcs.toLayer(Effect.gen(function*() {
  const agents = yield* AgentRegistry
  const engine = yield* WorkflowEngine
  const keys = yield* IdempotencyKeys
  const logs = yield* LogStore
  const webhooks = yield* Webhooks

  return {
    AgentStream: ({ agentId, input, options }) =>
      Stream.unwrap(Effect.gen(function*() {
        const request = yield* withUser({
          ...(input === undefined ? {} : { input }),
          ...(options === undefined ? {} : { options })
        })
        const events = yield* agents.stream(agentId, request)
        // Pulled one event at a time; interrupting the stream cancels the reader, which aborts the model call.
        return Stream.fromReadableStream({
          evaluate: () => events,
          onError: (error) => new ExecutionFailed({ message: messageOf(error) })
        })
      })),

    WorkflowStream: ({ idempotencyKey, workflowId, ...request }) =>
      Stream.unwrap(Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const userId = yield* actingUserId(caller, request.options?.userId)
        // As over HTTP: a callback's URL and its owner's secret are checked before anything is stored.
        if (request.options?.webhook !== undefined) yield* webhooks.checkStart(request.options.webhook.url, caller)
        const idempotent = idempotencyKey === undefined
          ? {}
          : {
            idempotent: keys.forStart({
              route: "stream",
              workflowId,
              caller: callerOf(caller.user),
              key: idempotencyKey
            }, request)
          }
        return yield* engine.stream(workflowId, request, { user: caller.user, userId, ...idempotent })
      })),

    WorkflowAttach: ({ after, executionId, workflowId }) =>
      Stream.unwrap(
        Effect.flatMap(
          CurrentCaller,
          ({ visibility }) => engine.attach(workflowId, executionId, after ?? 0, visibility)
        )
      ),

    LiveLogs: ({ limit, ...filter }) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const { initial, isNew, live } = yield* followLogs(logs, { ...filter, limit: logLimit(limit) })
        // The subscription is a sliding window: a client that does not ack loses its oldest entries, never grows it.
        const updates = Stream.fromQueue(live, { maxChunkSize: LOG_CHUNK }).pipe(
          Stream.filter(isNew),
          Stream.map((entry): LogFeedMessage => ({ type: "update", logs: [entry] }))
        )
        return Stream.concat(Stream.make<Array<LogFeedMessage>>({ type: "initial", logs: initial }), updates)
      }))
  }
}))
