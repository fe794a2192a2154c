/**
 * A parent call stopped on its sub-agents' approvals (issue #32, settled 4): its pending approvals are
 * theirs, and its approval rows keep what continues each sub-agent beside its own continuation.
 */
import { Schema } from "effect"
import type { Delegations, PendingApproval } from "../generation/contract.js"
import { DELEGATE_TASK, SubAnswer } from "./delegateTask.js"

/** A delegate_task call that waits on its sub-agents' approvals, as the parent's approval state keeps it. */
export const StoredDelegation = Schema.Struct({
  /** The SDK's approval request of the delegate_task call (approved once its sub-agents went on). */
  approvalId: Schema.String,
  toolCallId: Schema.String,
  input: Schema.Unknown,
  /** The sub-agents that answered already. */
  answers: Schema.Array(SubAnswer),
  /** Those stopped on approvals: which, and their own approval state. */
  stopped: Schema.Array(
    Schema.Struct({ agentId: Schema.String, approvalIds: Schema.Array(Schema.String), state: Schema.Unknown })
  )
})
export type StoredDelegation = typeof StoredDelegation.Type

type Request = Omit<PendingApproval, "expiresAt">

/** The call's requests with each stopped delegate_task call's replaced by its sub-agents' requests. */
export const bubbled = (
  requests: ReadonlyArray<Request>,
  delegations: Delegations | undefined
): { readonly requests: ReadonlyArray<Request>; readonly stored?: ReadonlyArray<StoredDelegation> } => {
  if (delegations === undefined || delegations.size === 0) return { requests }
  const stored: Array<StoredDelegation> = []
  const expanded = requests.flatMap((request) => {
    const outcome = request.toolName === DELEGATE_TASK ? delegations.get(request.toolCallId) : undefined
    if (outcome === undefined || outcome.stopped.length === 0) return [request]
    stored.push({
      approvalId: request.approvalId,
      toolCallId: request.toolCallId,
      input: request.input,
      answers: outcome.answers,
      stopped: outcome.stopped.map((sub) => ({
        agentId: sub.agentId,
        approvalIds: sub.approvals.requests.map((one) => one.approvalId),
        state: sub.approvals.state
      }))
    })
    return outcome.stopped.flatMap((sub) => sub.approvals.requests.map((one) => ({ ...one, agentId: sub.agentId })))
  })
  return stored.length === 0 ? { requests } : { requests: expanded, stored }
}
