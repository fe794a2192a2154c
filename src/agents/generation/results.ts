import type { LanguageModelUsage, StepResult, ToolSet } from "ai"
import type { TextResult, Usage } from "../AgentsSchemas.js"
import type { PendingApproval } from "./contract.js"

/** The spec's usage object from the SDK's (summed over the call's steps); 0 where nothing was reported. */
export const toUsage = (usage: LanguageModelUsage | undefined): Usage => {
  const promptTokens = usage?.inputTokens ?? 0
  const completionTokens = usage?.outputTokens ?? 0
  return {
    promptTokens,
    completionTokens,
    totalTokens: usage?.totalTokens ?? promptTokens + completionTokens,
    cachedInputTokens: usage?.inputTokenDetails.cacheReadTokens ?? 0,
    reasoningTokens: usage?.outputTokenDetails.reasoningTokens ?? 0
  }
}

/** Tool calls and results of every step, not only the last one's. */
export const collectTools = (
  steps: ReadonlyArray<StepResult<ToolSet>>
): Pick<TextResult, "toolCalls" | "toolResults"> => ({
  toolCalls: steps.flatMap((step) =>
    step.toolCalls.map((call) => ({ toolCallId: call.toolCallId, toolName: call.toolName, args: call.input }))
  ),
  toolResults: steps.flatMap((step) =>
    step.toolResults.map((result) => ({
      toolCallId: result.toolCallId,
      toolName: result.toolName,
      result: result.output
    }))
  )
})

/** The approval requests the call's last step stopped on. */
export const requestsOf = (steps: ReadonlyArray<StepResult<ToolSet>>): Array<Omit<PendingApproval, "expiresAt">> =>
  (steps.at(-1)?.content ?? []).flatMap((part) =>
    part.type === "tool-approval-request"
      ? [{
        approvalId: part.approvalId,
        toolName: part.toolCall.toolName,
        toolCallId: part.toolCall.toolCallId,
        input: part.toolCall.input
      }]
      : []
  )
