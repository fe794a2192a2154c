/** Tool approval plugged into the generation core (generation/plugins.ts): its rows, its gate and its continuations. */
import { Effect, Option, type Runtime } from "effect"
import type { RunSubAgent } from "../delegation/delegateTask.js"
import type { NewApprovals } from "../generation/contract.js"
import type { ApprovalsPlugin, Stop } from "../generation/plugins.js"
import type { ApprovalStore } from "./ApprovalStore.js"
import { chatAnswers, chatApprovals } from "./chat.js"
import { continueAnswered, newApprovals, resume } from "./continuation.js"
import { delegatedRefusal, gatedRun, NO_APPROVED_CALLS, toolApprovalFor } from "./gate.js"
import { streamApprovals } from "./streamed.js"
import { approvalRequested } from "./telemetry.js"

export interface ApprovalsSettings {
  readonly store: ApprovalStore["Type"]
  /** How long a request waits for its answer. */
  readonly ttlMs: number
  /** The SDK's signing secret for the approval round trip. */
  readonly secret: string | undefined
  readonly runtime: Runtime.Runtime<never>
  /** How a sub-agent stopped under a delegate_task call is continued (none: it is no longer called). */
  readonly runSubAgent?: RunSubAgent | undefined
}

/** Stores a stopped call's rows with the current span, which the answering call's span links to. */
const keepIn = (store: ApprovalStore["Type"]) => (rows: NewApprovals) =>
  Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
    store.request(
      Option.isSome(span) ? { ...rows, trace: { traceId: span.value.traceId, spanId: span.value.spanId } } : rows
    ))

export const approvalsPlugin = (settings: ApprovalsSettings): ApprovalsPlugin => {
  const { runtime, ttlMs } = settings
  const stop = (args: Stop) => newApprovals(ttlMs, args)
  return {
    secret: settings.secret,
    resume: (agent, request) => resume(settings, agent, request),
    chatAnswers,
    continueAnswered: (agent, answers, caller) => continueAnswered(settings, agent, answers, caller),
    toolApproval: (tools, caller, others) => toolApprovalFor(tools, caller, runtime, others),
    gate: (approved, caller, delegated) => (tool, input, toolCallId, run) =>
      gatedRun(
        tool,
        input,
        toolCallId,
        approved ?? NO_APPROVED_CALLS,
        caller,
        runtime,
        run,
        delegated ? delegatedRefusal : undefined
      ),
    stop,
    requested: (pending) => approvalRequested(pending),
    keep: keepIn(settings.store),
    streamed: (agent, request, prepared, responseMessages, span) =>
      streamApprovals(runtime, stop, agent, request, prepared, responseMessages, span),
    chatParts: chatApprovals
  }
}
