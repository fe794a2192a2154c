import type { ModelMessage, StepResult, ToolSet } from "ai"
import { createHash } from "node:crypto"
import { messageOf } from "../../core/errors.js"
import { canonicalJson } from "../../core/jsonText.js"

/**
 * A tool result the service produced, as memory keeps it to recognise it when a caller sends it back in
 * their history: the call's id and tool, and a digest of what the tool answered (its result, or its
 * error's text), so a result altered on the way back is not the service's either.
 */
export interface ToolOutcome {
  readonly toolCallId: string
  readonly toolName: string
  readonly outcome: string
}

const digest = (kind: "result" | "error" | "other", value: unknown): string =>
  createHash("sha256").update(`${kind}:${canonicalJson(value)}`).digest("base64url")

/** The outcomes of every step's tool calls (errors included: the model saw them as the tool's answer). */
export const toolOutcomes = (steps: ReadonlyArray<StepResult<ToolSet>>): Array<ToolOutcome> =>
  steps.flatMap((step) =>
    step.content.flatMap((part): Array<ToolOutcome> =>
      part.type === "tool-result"
        ? [{ toolCallId: part.toolCallId, toolName: part.toolName, outcome: digest("result", part.output ?? null) }]
        : part.type === "tool-error"
        ? [{ toolCallId: part.toolCallId, toolName: part.toolName, outcome: digest("error", messageOf(part.error)) }]
        : []
    )
  )

/** A result's outcome as the client received it (an output guardrail's rewrite of the tool's value). */
export const resultOutcome = (toolCallId: string, toolName: string, value: unknown): ToolOutcome => ({
  toolCallId,
  toolName,
  outcome: digest("result", value ?? null)
})

/** One streamed tool part's outcome (for /stream, which reads the SDK's parts one by one). */
export const streamedToolOutcome = (
  part: {
    readonly type: "tool-result"
    readonly toolCallId: string
    readonly toolName: string
    readonly output: unknown
  } | {
    readonly type: "tool-error"
    readonly toolCallId: string
    readonly toolName: string
    readonly error: unknown
  }
): ToolOutcome => ({
  toolCallId: part.toolCallId,
  toolName: part.toolName,
  outcome: part.type === "tool-result" ? digest("result", part.output ?? null) : digest("error", messageOf(part.error))
})

/**
 * A denied call's outcome as a chat client sends it back (the SDK's UI conversion of an `output-denied`
 * part: the denial's reason as the tool's error text).
 */
export const deniedToolOutcome = (toolCallId: string, toolName: string, reason: string | undefined): ToolOutcome => ({
  toolCallId,
  toolName,
  outcome: digest("error", reason ?? "Tool call execution denied.")
})

/**
 * The tool results a caller's messages carry (tool messages, and assistant messages' provider-run
 * results), as the model would see them: a UI message's output becomes `{type: "json" | "text", value}`,
 * its error `{type: "error-text", value}`.
 */
export const claimedToolResults = (messages: ReadonlyArray<ModelMessage>): Array<ToolOutcome> =>
  messages.flatMap((message) =>
    typeof message.content === "string"
      ? []
      : message.content.flatMap((part): Array<ToolOutcome> => {
        if (part.type !== "tool-result") return []
        const { output } = part
        const outcome = output.type === "json" || output.type === "text"
          ? digest("result", output.value)
          : output.type === "error-text" || output.type === "error-json"
          ? digest("error", output.value)
          : digest("other", output)
        return [{ toolCallId: part.toolCallId, toolName: part.toolName, outcome }]
      })
  )
