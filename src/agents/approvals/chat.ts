/** Tool approval over /chat (issue #32 item 1): the AI SDK's UI message protocol, answered by the store's rows. */
import type { UIMessage } from "ai"
import type { ModelRef, TextResult } from "../AgentsSchemas.js"
import type {
  ApprovalAnswer,
  CallRequest,
  PendingApproval,
  Prior,
  Resumed,
  StreamPart as Part
} from "../generation/contract.js"
import type { StreamApprovals, StreamOutcome } from "../generation/eventStream.js"
import { toUsage } from "../generation/results.js"
import { withPrior } from "../generation/tally.js"
import { deniedToolOutcome, streamedToolOutcome, type ToolOutcome } from "../generation/toolOutcomes.js"
import { inputHash } from "./ApprovalStore.js"

const toolNameOf = (part: { readonly type: string; readonly toolName?: unknown }): string | undefined =>
  part.type === "dynamic-tool"
    ? (typeof part.toolName === "string" ? part.toolName : undefined)
    : part.type.startsWith("tool-")
    ? part.type.slice("tool-".length)
    : undefined

interface RespondedPart {
  readonly type: string
  readonly toolName?: unknown
  readonly state?: unknown
  readonly input?: unknown
  readonly approval?: { readonly id?: unknown; readonly approved?: unknown; readonly reason?: unknown }
}

/**
 * The answers a chat request carries (`addToolApprovalResponse`): the `approval-responded` tool parts
 * of its last message when that is the assistant's, each bound to the tool and input the client shows.
 * Undefined when there are none (the plain path: the last message is the user's).
 */
export const chatAnswers = (request: CallRequest): ReadonlyArray<ApprovalAnswer> | undefined => {
  if (request.clientConversation === undefined || !Array.isArray(request.input)) return undefined
  const last = request.input.at(-1) as UIMessage | undefined
  if (last?.role !== "assistant" || !Array.isArray(last.parts)) return undefined
  const answers = (last.parts as ReadonlyArray<RespondedPart>).flatMap((part): Array<ApprovalAnswer> => {
    const toolName = part.state === "approval-responded" ? toolNameOf(part) : undefined
    const approval = part.approval
    if (toolName === undefined || typeof approval?.id !== "string" || typeof approval.approved !== "boolean") return []
    return [{
      approvalId: approval.id,
      approved: approval.approved,
      ...(typeof approval.reason === "string" ? { reason: approval.reason } : {}),
      expect: { toolName, inputHash: inputHash(toolName, part.input) }
    }]
  })
  return answers.length === 0 ? undefined : answers
}

/**
 * The SDK's stream of a chat call whose tools may need approval: the approval requests it stops on are
 * held until its `finish` part, stored as rows (with what continues the call), and only then passed on
 * (so a client never holds an approval id the store does not); the call is then recorded as pending
 * (no history yet). A call that finishes is recorded with what its earlier part did (a continuation),
 * unless output guardrails record it from the guarded text (`recordsCompleted` false).
 */
export const chatApprovals = (
  approvals: StreamApprovals,
  record: (outcome: StreamOutcome) => Promise<void>,
  recordsCompleted: boolean,
  answered: () => ModelRef,
  resumed: Resumed | undefined
): TransformStream<Part, Part> => {
  let stepText = ""
  const toolCalls: Array<TextResult["toolCalls"][number]> = []
  // A denial's result is the client's to send back in its next request: it is the service's own.
  const outcomes: Array<ToolOutcome> = (resumed?.answers ?? []).flatMap((answer) =>
    answer.approved ? [] : [deniedToolOutcome(answer.toolCallId, answer.toolName, answer.reason)]
  )
  const held: Array<Part> = []
  const requests: Array<Omit<PendingApproval, "expiresAt">> = []
  return new TransformStream<Part, Part>({
    async transform(part, controller) {
      if (part.type === "start-step") stepText = ""
      else if (part.type === "text-delta") stepText += part.text
      else if (part.type === "tool-call") {
        toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, args: part.input })
      } else if (part.type === "tool-result" || part.type === "tool-error") outcomes.push(streamedToolOutcome(part))
      else if (part.type === "tool-approval-request") {
        const { input, toolCallId, toolName } = part.toolCall
        requests.push({ approvalId: part.approvalId, toolName, toolCallId, input })
        held.push(part)
        return
      } else if (part.type === "finish") {
        const now: Prior = { usage: toUsage(part.totalUsage), toolCalls, toolResults: [], outcomes }
        const whole = approvals.prior === undefined ? now : withPrior(approvals.prior, now)
        if (requests.length > 0) {
          const stored = await approvals.store(requests, whole)
          await record({ status: "pending", approvals: stored.rows })
          for (const request of held) controller.enqueue(request)
        } else if (recordsCompleted) {
          await record({
            status: "completed",
            output: stepText,
            usage: whole.usage,
            toolCalls: whole.toolCalls,
            toolResults: whole.outcomes,
            model: answered()
          })
        }
      }
      controller.enqueue(part)
    }
  })
}
