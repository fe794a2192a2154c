import type { ModelMessage } from "ai"
import { Runtime, type Tracer } from "effect"
import type { AgentDefinition } from "../Agent.js"
import type { CallRequest, NewApprovals, PendingApproval, PreparedCall } from "../generation/contract.js"
import type { StreamApprovals } from "../generation/eventStream.js"
import type { Stop } from "../generation/plugins.js"
import { approvalRequested } from "./telemetry.js"

/**
 * How a streamed call stores the approval requests it stops on: with the SDK's response messages
 * (settled once its `finish` part was read), before the frames naming them are sent.
 */
export const streamApprovals = (
  runtime: Runtime.Runtime<never>,
  stop: (stop: Stop) => { readonly rows: NewApprovals; readonly pending: Array<PendingApproval> },
  agent: AgentDefinition,
  request: CallRequest,
  prepared: PreparedCall,
  responseMessages: PromiseLike<ReadonlyArray<ModelMessage>>,
  span: Tracer.Span
): StreamApprovals => {
  // Read only when the call stops on approvals: a call aborted before (a client gone) rejects it, and
  // an unhandled rejection would end the process.
  Promise.resolve(responseMessages).catch(() => undefined)
  const startedAt = prepared.resumed?.startedAt ?? new Date().toISOString()
  return {
    prior: prepared.resumed?.prior,
    store: async (requests, whole) => {
      const messages = await responseMessages
      const made = stop({
        agent,
        request,
        callId: prepared.callId,
        startedAt,
        messages: [...prepared.messages, ...messages],
        newMessages: prepared.newMessages,
        requests,
        prior: whole,
        recordedInput: prepared.recordedInput,
        delegations: prepared.delegations
      })
      await Runtime.runPromise(runtime)(approvalRequested(made.pending, span))
      return made
    }
  }
}
