import { Clock, Effect, Metric, Option, Tracer } from "effect"
import type { AnsweredApproval, PendingApproval, RequestTrace } from "../generation/contract.js"

/**
 * Issue #32 (settled 12): approvals on the agent call's span, as events naming the approval, the tool
 * and the decision (never the input), and counted by decision.
 */
export const toolApprovals = Metric.counter("gen_ai.tool.approvals", {
  description: "Tool approvals requested and answered (decision: requested, approved, denied)",
  incremental: true
})

const counted = (decision: "requested" | "approved" | "denied", n: number) =>
  n === 0 ? Effect.void : Metric.incrementBy(Metric.tagged(toolApprovals, "decision", decision), n)

const onSpan = (span: Option.Option<Tracer.AnySpan>, name: string, events: ReadonlyArray<Record<string, unknown>>) =>
  Option.match(span, {
    onNone: () => Effect.void,
    onSome: (found) =>
      found._tag === "Span"
        ? Clock.currentTimeNanos.pipe(
          Effect.map((now) => events.forEach((attributes) => found.event(name, now, attributes)))
        )
        : Effect.void
  })

/** The `gen_ai.tool.approval.requested` events and count, on `span` (the call's) or the current one. */
export const approvalRequested = (pending: ReadonlyArray<PendingApproval>, span?: Tracer.AnySpan) =>
  Effect.flatMap(
    span === undefined ? Effect.option(Effect.currentSpan) : Effect.succeed(Option.some(span)),
    (found) =>
      Effect.zipRight(
        onSpan(
          found,
          "gen_ai.tool.approval.requested",
          pending.map((one) => ({ "gen_ai.tool.approval.id": one.approvalId, "gen_ai.tool.name": one.toolName }))
        ),
        counted("requested", pending.length)
      )
  )

/**
 * The `gen_ai.tool.approval.answered` events and counts, on the current span, linked to the spans of
 * the calls that asked (settled 12).
 */
export const approvalAnswered = (
  answers: ReadonlyArray<AnsweredApproval>,
  requestedIn: ReadonlyArray<RequestTrace> = []
) =>
  Effect.flatMap(Effect.option(Effect.currentSpan), (found) =>
    Effect.all([
      requestedIn.length === 0 || Option.isNone(found) ?
        Effect.void :
        Effect.linkSpanCurrent(requestedIn.map((request) => ({
          _tag: "SpanLink" as const,
          span: Tracer.externalSpan(request),
          attributes: { "gen_ai.tool.approval.link": "requested" }
        }))),
      onSpan(
        found,
        "gen_ai.tool.approval.answered",
        answers.map((one) => ({
          "gen_ai.tool.approval.id": one.approvalId,
          "gen_ai.tool.name": one.toolName,
          "gen_ai.tool.approval.decision": one.approved ? "approved" : "denied"
        }))
      ),
      counted("approved", answers.filter((one) => one.approved).length),
      counted("denied", answers.filter((one) => !one.approved).length)
    ], { discard: true }))
