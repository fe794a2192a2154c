import type { ModelMessage, StepResult, ToolSet } from "ai"
import type { TextResult } from "../AgentsSchemas.js"
import { collectTools, toUsage } from "../generation/results.js"
import { claimedToolResults, toolOutcomes } from "../generation/toolOutcomes.js"
import type { Prior } from "./continuation.js"

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

/** What this part of a call did: its steps' usage, tool calls and results (a continuation's leading results first). */
export const partOf = (steps: ReadonlyArray<StepResult<ToolSet>>, response: ReadonlyArray<ModelMessage>): Prior => {
  const leading = leadingToolMessages(response)
  const tools = collectTools(steps)
  const started: TextResult["toolResults"] = leading.flatMap((message) =>
    typeof message.content === "string"
      ? []
      : message.content.flatMap((part) =>
        part.type === "tool-result" ? [{ toolCallId: part.toolCallId, toolName: part.toolName, result: resultValue(part.output) }] : []
      )
  )
  return {
    usage: toUsage(steps.reduce<Parameters<typeof toUsage>[0]>((sum, step) => addSdkUsage(sum, step.usage), undefined)),
    toolCalls: tools.toolCalls,
    toolResults: [...started, ...tools.toolResults],
    outcomes: [...claimedToolResults(leading), ...toolOutcomes(steps)]
  }
}

type SdkUsage = NonNullable<Parameters<typeof toUsage>[0]>

const plus = (a: number | undefined, b: number | undefined) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0))

const addSdkUsage = (sum: SdkUsage | undefined, usage: SdkUsage): SdkUsage =>
  sum === undefined
    ? usage
    : {
      ...usage,
      inputTokens: plus(sum.inputTokens, usage.inputTokens),
      outputTokens: plus(sum.outputTokens, usage.outputTokens),
      totalTokens: plus(sum.totalTokens, usage.totalTokens)
    }
