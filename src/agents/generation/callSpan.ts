import { Cause, Effect, Exit, FiberId, type Tracer } from "effect"
import type { AgentDefinition } from "../Agent.js"
import type { CallRequest } from "./contract.js"

/**
 * An agent call's span attributes: the service's own (`entity.*`, read by the trace index and the
 * console) and the OpenTelemetry GenAI agent attributes ("invoke_agent").
 */
export const agentSpanAttributes = (agent: AgentDefinition, request: CallRequest): Record<string, unknown> => {
  const conversationId = request.options?.conversationId
  return {
    "entity.type": "agent",
    "entity.id": agent.id,
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.id": agent.id,
    "gen_ai.agent.name": agent.name,
    ...(conversationId === undefined ? {} : { "gen_ai.conversation.id": conversationId })
  }
}

/**
 * Opens a streamed call's span. A streamed call outlives its handler (the model answers while the
 * response is written), so its span is not scoped to the handler: it is ended by `endCallSpan` when
 * the call's outcome is recorded, and the model call, its tools, its memory writes and its log lines
 * are all inside it.
 */
export const openCallSpan = (name: string, agent: AgentDefinition, request: CallRequest) =>
  Effect.makeSpan(name, { captureStackTrace: false, attributes: agentSpanAttributes(agent, request) })

/** Ends the call's span once (later calls do nothing): completed is ok, cancelled is an interruption. */
export const endCallSpan = (span: Tracer.Span, exit: Exit.Exit<unknown, unknown>) =>
  Effect.clockWith((clock) =>
    Effect.sync(() => {
      if (span.status._tag !== "Ended") span.end(clock.unsafeCurrentTimeNanos(), exit)
    })
  )

/**
 * Runs a streamed call's set-up inside its own span, opened here and ended when the outcome is
 * recorded (or now, when the set-up fails).
 */
export const inCallSpan = <A, E>(
  name: string,
  agent: AgentDefinition,
  request: CallRequest,
  setUp: (span: Tracer.Span) => Effect.Effect<A, E>
) =>
  Effect.flatMap(openCallSpan(name, agent, request), (span) =>
    setUp(span).pipe(
      Effect.withParentSpan(span),
      Effect.onExit((exit) => exit._tag === "Failure" ? endCallSpan(span, exit) : Effect.void)
    ))

/** A provider's error as a cause (the SDK hands it over as a value). */
export const causeOf = (error: unknown): Cause.Cause<unknown> => Cause.fail(error)

export const outcomeExit = (
  status: "completed" | "error" | "cancelled" | "blocked" | "pending",
  cause: Cause.Cause<unknown> | undefined
) =>
  status === "completed" || status === "blocked" || status === "pending"
    ? Exit.void
    : status === "cancelled"
    ? Exit.interrupt(FiberId.none)
    : Exit.failCause(cause ?? Cause.fail("failed"))
