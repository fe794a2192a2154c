/** What a finished call leaves: its history entry, its memory, its log line. */
import type { ModelMessage } from "ai"
import { Cause, Effect, Runtime, type Tracer } from "effect"
import type { ExecutionFailed } from "../../core/errors.js"
import type { AgentDefinition } from "../Agent.js"
import { answeringModel } from "../models/fallbackModel.js"
import type { GenerationEnv } from "./call.js"
import { endCallSpan, outcomeExit } from "./callSpan.js"
import type { Blocked, CallRequest, Done, Outcome, PreparedCall } from "./contract.js"
import { endHooks, hasEndHooks } from "./hooks.js"
import { recordedInput, textOf } from "./messages.js"

/** Writes the history entry and, when the call completed with memory on, the exchange (all or nothing). */
export const finish = (
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest,
  prepared: PreparedCall,
  started: Date,
  outcome: Outcome
) =>
  Effect.gen(function*() {
    if (outcome.status === "pending") {
      // A sub-agent's requests become its parent call's (delegation/delegateTask.ts).
      if (outcome.approvals !== undefined && request.collectApprovals !== undefined) {
        return request.collectApprovals(outcome.approvals)
      }
      if (outcome.approvals !== undefined) yield* env.approvals.keep(outcome.approvals)
      return
    }
    const status = outcome.status
    const remembered = status === "completed" && prepared.remember
      ? {
        conversationId: prepared.call.conversationId!,
        userId: prepared.call.userId,
        replacesLastAnswer: request.clientConversation?.replacesLastAnswer === true,
        owner: request.owner,
        messages: [
          ...prepared.newMessages.filter((m) => m.role === "user" && textOf(m) !== "")
            .map((m): ModelMessage => ({ role: "user", content: textOf(m) })),
          ...(outcome.output ? [{ role: "assistant", content: outcome.output } satisfies ModelMessage] : [])
        ]
      }
      : undefined
    // The guarded stream paths record without it: the wrapper (or the one model) knows who answered.
    const model = outcome.model ??
      (outcome.status === "completed" || outcome.status === "blocked" ? answeringModel(prepared.model) : undefined)
    yield* env.memory.saveCall(
      agent.id,
      {
        id: prepared.callId,
        conversationId: prepared.call.conversationId ?? null,
        userId: prepared.call.userId ?? null,
        input: prepared.recordedInput ?? recordedInput(request),
        output: outcome.output ?? null,
        status,
        startTime: prepared.resumed?.startedAt ?? started.toISOString(),
        endTime: new Date().toISOString(),
        usage: outcome.usage ?? null,
        toolCalls: outcome.toolCalls ?? [],
        ...(model === undefined ? {} : { model })
      },
      remembered,
      outcome.toolResults
    )
    // Logged once the call is committed, off the response's path (the line costs about as much as the commit's statement).
    // A failed call (a provider's failure, most often) is a warning with its cause.
    const line = outcome.status === "error"
      ? Effect.logWarning("agent call error", outcome.cause ?? Cause.empty)
      : Effect.logInfo(`agent call ${outcome.status}`)
    yield* Effect.forkDaemon(line.pipe(
      Effect.annotateLogs({
        agentId: agent.id,
        ...(prepared.call.conversationId ? { conversationId: prepared.call.conversationId } : {})
      })
    ))
    // onError / onEnd, once the entry is committed (generation/hooks.ts).
    if (hasEndHooks(agent)) yield* endHooks(agent, prepared, outcome)
  })

/** Records the outcome of a one-shot call whatever its exit. */
export const tracked = <A extends { readonly outcome: Outcome }, E>(
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest,
  prepared: PreparedCall,
  effect: Effect.Effect<A, E>
) =>
  Effect.suspend(() => {
    const started = new Date()
    return effect.pipe(
      Effect.onExit((exit) =>
        finish(
          env,
          agent,
          request,
          prepared,
          started,
          exit._tag === "Success"
            ? exit.value.outcome
            : Cause.isInterruptedOnly(exit.cause)
            ? { status: "cancelled" }
            : { status: "error", cause: exit.cause }
        )
      )
    )
  })

/**
 * Records a streamed call's outcome from the SDK's promises, inside the agent call's span, then ends
 * that span; never throws (it may run while the service shuts down).
 */
export const recorder = (
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest,
  prepared: PreparedCall,
  span: Tracer.Span
) => {
  const started = new Date()
  return (outcome: Outcome) =>
    Runtime.runPromise(env.runtime)(
      finish(env, agent, request, prepared, started, outcome).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not record the agent call", cause)),
        Effect.zipRight(endCallSpan(span, outcomeExit(outcome.status, outcome.cause))),
        Effect.withParentSpan(span)
      )
    ).catch(() => undefined)
}

/** The plain path's effect, typed as the guarded one's (nothing runs). */
export const unguarded = <A, E>(
  self: Effect.Effect<Done<A>, E>
): Effect.Effect<Done<A> | Blocked, E | ExecutionFailed> => self
