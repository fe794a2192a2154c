/**
 * An agent's hooks (issue #32 item 3, settled 10): user functions told of a call's start and end and of
 * each tool it runs. `onStart`, `onToolStart` and `onToolEnd` are awaited where they happen; `onError`
 * then `onEnd` run once the call's history entry is committed, in a detached fiber. Each is bounded to
 * 5 s and runs in its own child span of the call's span (`agent.hook <name>`, with `hook.outcome`);
 * a failure, a throw or a timeout is logged as a warning and never fails, changes or delays the call
 * beyond the awaited hook's own time. An agent without hooks never reaches this file's code.
 */
import { Cause, Data, Duration, Effect } from "effect"
import { runUserCode } from "../../core/userCode.js"
import { errorDetailOf, failureMessage } from "../../observability/errorDetail.js"
import { capString } from "../../observability/Redaction.js"
import type { AgentCallContext, AgentDefinition, AgentHook, AgentHookEvent } from "../Agent.js"
import type { Outcome } from "./contract.js"

export const AGENT_HOOK_TIMEOUT = Duration.seconds(5)

type HookName = "onStart" | "onEnd" | "onToolStart" | "onToolEnd" | "onError"

class HookTimedOut extends Data.TaggedError("HookTimedOut")<{ readonly message: string }> {}

/** Runs one hook with its event: never fails, records its outcome on its span. */
const runHook = <E extends AgentHookEvent>(
  agent: AgentDefinition,
  name: HookName,
  hook: AgentHook<E>,
  event: E
): Effect.Effect<void> =>
  runUserCode(() => hook(event), Effect.failCause).pipe(
    Effect.timeoutFail({
      duration: AGENT_HOOK_TIMEOUT,
      onTimeout: () => new HookTimedOut({ message: `did not finish within ${Duration.format(AGENT_HOOK_TIMEOUT)}` })
    }),
    Effect.zipRight(Effect.annotateCurrentSpan("hook.outcome", "ok")),
    Effect.catchAllCause((cause) => {
      if (Cause.isInterruptedOnly(cause)) return Effect.annotateCurrentSpan("hook.outcome", "interrupted")
      const error = Cause.squash(cause)
      const detail = errorDetailOf(error)
      const message = capString(failureMessage(error, detail), 512)
      const tag = detail?._tag ?? (error instanceof HookTimedOut ? "HookTimedOut" : "Error")
      return Effect.zipRight(
        Effect.annotateCurrentSpan({
          "hook.outcome": tag === "HookTimedOut" ? "timed out" : "failed",
          "error.type": tag
        }),
        Effect.logWarning(`agent hook ${name} failed (${tag}: ${message}); the call is not affected`)
      )
    }),
    Effect.withSpan(`agent.hook ${name}`, {
      captureStackTrace: false,
      attributes: { "entity.type": "agent", "entity.id": agent.id, "hook.name": name, "agent.call.id": event.callId }
    }),
    Effect.annotateLogs({
      agentId: agent.id,
      hook: name,
      ...(event.conversationId === undefined ? {} : { conversationId: event.conversationId })
    })
  )

const baseOf = (agent: AgentDefinition, callId: string, call: AgentCallContext): AgentHookEvent => ({
  agentId: agent.id,
  callId,
  call,
  conversationId: call.conversationId
})

/** onStart, awaited (call it only when the agent has one). */
export const startHook = (
  agent: AgentDefinition,
  prepared: { readonly callId: string; readonly call: AgentCallContext }
) =>
  agent.onStart === undefined
    ? Effect.void
    : runHook(agent, "onStart", agent.onStart, baseOf(agent, prepared.callId, prepared.call))

export const hasEndHooks = (agent: AgentDefinition): boolean => agent.onEnd !== undefined || agent.onError !== undefined

/**
 * onError (for a failed call) then onEnd, in a daemon fiber: the caller has committed the history
 * entry and goes on at once.
 */
export const endHooks = (
  agent: AgentDefinition,
  prepared: { readonly callId: string; readonly call: AgentCallContext },
  outcome: Outcome
): Effect.Effect<void> => {
  // A call waiting on approvals has not ended: its hooks run once its continuation finishes the turn.
  if (outcome.status === "pending") return Effect.void
  const base = baseOf(agent, prepared.callId, prepared.call)
  const onError = outcome.status === "error" && agent.onError !== undefined
    ? runHook(agent, "onError", agent.onError, { ...base, error: errorMessage(outcome.cause) })
    : Effect.void
  const onEnd = agent.onEnd === undefined ? Effect.void : runHook(agent, "onEnd", agent.onEnd, {
    ...base,
    status: outcome.status,
    usage: outcome.usage,
    output: outcome.output
  })
  // Interruptible: a one-shot call records from its exit's finalizer, whose forks would inherit its
  // uninterruptibility (and then no timeout could stop a hung hook).
  return Effect.asVoid(Effect.forkDaemon(Effect.interruptible(Effect.zipRight(onError, onEnd))))
}

const errorMessage = (cause: Cause.Cause<unknown> | undefined): string => {
  if (cause === undefined) return "failed"
  const error = Cause.squash(cause)
  return failureMessage(error, errorDetailOf(error))
}

/** Runs a tool between the agent's tool hooks (when it has any). */
export interface ToolHooks {
  readonly around: <A, E>(
    toolName: string,
    toolCallId: string,
    input: unknown,
    run: Effect.Effect<A, E>
  ) => Effect.Effect<A, E>
}

/** The agent's tool hooks for a call; undefined when it has none (its tools then run as they are). */
export const toolHooksOf = (agent: AgentDefinition, callId: string, call: AgentCallContext): ToolHooks | undefined => {
  const { onToolEnd, onToolStart } = agent
  if (onToolStart === undefined && onToolEnd === undefined) return undefined
  const base = baseOf(agent, callId, call)
  return {
    around: (toolName, toolCallId, input, run) => {
      const event = { ...base, toolName, toolCallId, input }
      const start = onToolStart === undefined
        ? run
        : Effect.zipRight(runHook(agent, "onToolStart", onToolStart, event), run)
      if (onToolEnd === undefined) return start
      return start.pipe(
        Effect.tapErrorCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.void
            : runHook(agent, "onToolEnd", onToolEnd, { ...event, error: errorMessage(cause) })
        ),
        Effect.tap((output) => runHook(agent, "onToolEnd", onToolEnd, { ...event, output }))
      )
    }
  }
}
