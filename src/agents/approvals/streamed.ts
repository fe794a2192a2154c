import type { ModelMessage } from "ai"
import { Runtime, type Tracer } from "effect"
import type { AgentDefinition } from "../Agent.js"
import type { CallRequest, GenerationEnv, PreparedCall } from "../generation/call.js"
import type { StreamApprovals } from "../generation/eventStream.js"
import { newApprovals } from "./continuation.js"
import { approvalRequested } from "./telemetry.js"

/**
 * How a streamed call stores the approval requests it stops on: with the SDK's response messages
 * (settled once its `finish` part was read), before the frames naming them are sent.
 */
export const streamApprovals = (
  env: GenerationEnv,
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
      const made = newApprovals({
        env,
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
      await Runtime.runPromise(env.runtime)(approvalRequested(made.pending, span))
      return made
    }
  }
}
