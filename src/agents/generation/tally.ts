/** What a call did, summed over its parts (a call stopped for approval and its continuation): usage and tool traffic. */
import type { LanguageModelUsage, ModelMessage, StepResult, ToolSet } from "ai"
import type { TextResult, Usage } from "../AgentsSchemas.js"
import type { Prior } from "./contract.js"
import { collectTools, toUsage } from "./results.js"
import { claimedToolResults, toolOutcomes } from "./toolOutcomes.js"

export const addUsage = (a: Usage, b: Usage): Usage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
  cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
  reasoningTokens: a.reasoningTokens + b.reasoningTokens
})

/** What the whole call did: its earlier part's and this part's. */
export const withPrior = (prior: Prior, now: Prior): Prior => ({
  usage: addUsage(prior.usage, now.usage),
  toolCalls: [...prior.toolCalls, ...now.toolCalls],
  toolResults: [...prior.toolResults, ...now.toolResults],
  outcomes: [...prior.outcomes, ...now.outcomes]
})

/**
 * The tool results a continued call starts with (the approved tools' and the denied ones'): the SDK
 * puts them in the response's leading tool message, not in a step.
 */
const leadingToolMessages = (response: ReadonlyArray<ModelMessage>): Array<ModelMessage> => {
  const end = response.findIndex((message) => message.role !== "tool")
  return response.slice(0, end === -1 ? response.length : end)
}

const resultValue = (output: unknown): unknown =>
  typeof output === "object" && output !== null && "type" in output && "value" in output &&
    (output.type === "json" || output.type === "text")
    ? output.value
    : output

/**
 * What this part of a call did: its usage (the SDK's total over its steps), its steps' tool calls and
 * results, and, for a continuation (`response` given), the tool results it started with first.
 */
export const partOf = (
  steps: ReadonlyArray<StepResult<ToolSet>>,
  usage: LanguageModelUsage,
  response?: ReadonlyArray<ModelMessage>
): Prior => {
  const tools = collectTools(steps)
  if (response === undefined) return { usage: toUsage(usage), ...tools, outcomes: toolOutcomes(steps) }
  const leading = leadingToolMessages(response)
  const started: TextResult["toolResults"] = leading.flatMap((message) =>
    typeof message.content === "string"
      ? []
      : message.content.flatMap((part) =>
        part.type === "tool-result"
          ? [{ toolCallId: part.toolCallId, toolName: part.toolName, result: resultValue(part.output) }]
          : []
      )
  )
  return {
    usage: toUsage(usage),
    toolCalls: tools.toolCalls,
    toolResults: [...started, ...tools.toolResults],
    outcomes: [...claimedToolResults(leading), ...toolOutcomes(steps)]
  }
}
