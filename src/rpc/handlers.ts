import { Effect, Stream } from "effect"
import { AgentRegistry } from "../agents/AgentRegistry.js"
import { withUser } from "../agents/handlers.js"
import { CurrentCaller } from "../auth/Authentication.js"
import { actingUserId } from "../auth/Ownership.js"
import { ExecutionFailed, messageOf } from "../errors.js"
import { logLimit } from "../observability/handlers.js"
import { LogStore, matches } from "../observability/LogStore.js"
import { callerOf, IdempotencyKeys } from "../workflows/IdempotencyKeys.js"
import { WorkflowEngine } from "../workflows/WorkflowEngine.js"
import { entryKey, INITIAL_BYTES, newestWithin } from "../ws/handlers.js"
import { type LogFeedMessage, ServiceRpcs } from "./RpcContract.js"

/** Live log entries are sent in chunks of at most this many (each chunk waits for the client's ack). */
const LOG_CHUNK = 64

/** The procedures of `ServiceRpcs`, each calling the same service as its HTTP twin. */
export const RpcHandlersLive = ServiceRpcs.toLayer(Effect.gen(function*() {
  const agents = yield* AgentRegistry
  const engine = yield* WorkflowEngine
  const keys = yield* IdempotencyKeys
  const logs = yield* LogStore

  return {
    AgentStream: ({ agentId, input, options }) =>
      Stream.unwrap(Effect.gen(function*() {
        const request = yield* withUser(options === undefined ? { input } : { input, options })
        const events = yield* agents.stream(agentId, request)
        // Pulled one event at a time; interrupting the stream cancels the reader, which aborts the model call.
        return Stream.fromReadableStream({ evaluate: () => events, onError: (error) => new ExecutionFailed({ message: messageOf(error) }) })
      })),

    WorkflowStream: ({ idempotencyKey, workflowId, ...request }) =>
      Stream.unwrap(Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const userId = yield* actingUserId(caller, request.options?.userId)
        const idempotent = idempotencyKey === undefined
          ? {}
          : { idempotent: keys.forStart({ route: "stream", workflowId, caller: callerOf(caller.user), key: idempotencyKey }, request) }
        return yield* engine.stream(workflowId, request, { user: caller.user, userId, ...idempotent })
      })),

    WorkflowAttach: ({ after, executionId, workflowId }) =>
      Stream.unwrap(Effect.flatMap(CurrentCaller, ({ visibility }) => engine.attach(workflowId, executionId, after ?? 0, visibility))),

    LiveLogs: ({ limit, ...filter }) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        // Subscribed before the initial query, so nothing logged in between is missed (and each entry is sent once).
        const subscription = yield* logs.subscribe
        const initial = newestWithin(yield* logs.query({ ...filter, limit: logLimit(limit) }), INITIAL_BYTES)
        const inInitial = new Set(initial.map(entryKey))
        // The subscription is a sliding window: a client that does not ack loses its oldest entries, never grows it.
        const live = Stream.fromQueue(subscription, { maxChunkSize: LOG_CHUNK }).pipe(
          Stream.filter((entry) => matches(entry, filter) && !(inInitial.size > 0 && inInitial.delete(entryKey(entry)))),
          Stream.map((entry): LogFeedMessage => ({ type: "update", logs: [entry] }))
        )
        return Stream.concat(Stream.make<Array<LogFeedMessage>>({ type: "initial", logs: initial }), live)
      }))
  }
}))
