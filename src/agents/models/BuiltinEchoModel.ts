import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ResponseMetadata,
  LanguageModelV4StreamPart,
  LanguageModelV4ToolCall,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4Usage
} from "@ai-sdk/provider"
import { randomUUID } from "node:crypto"
import {
  mentionedValue,
  numbersIn,
  pickTool,
  placeIn,
  quotedIn,
  remainderAfter,
  valueAfterName,
  wantsPlace
} from "./builtinReading.js"
import { fillSchema, type FillStyle } from "./schemaFill.js"

/**
 * A deterministic, offline language model so the service works without any API key.
 * It echoes the user, calls the tool the user's words ask for (by its name and description) with
 * arguments taken from the text, reports tool results and fills JSON schemas for structured output
 * (numbers from the text).
 */

export const BUILTIN_MODEL_ID = "builtin/echo"
const PROVIDER = "builtin"
const MODEL_NAME = "echo"
const LABEL = `[${BUILTIN_MODEL_ID}]`
const DEFAULT_WORD_DELAY_MS = 15

export const builtinEchoModel = (options: { wordDelayMs?: number } = {}): LanguageModelV4 => {
  const wordDelayMs = options.wordDelayMs ?? DEFAULT_WORD_DELAY_MS
  return {
    specificationVersion: "v4",
    provider: PROVIDER,
    modelId: MODEL_NAME,
    supportedUrls: {},
    doGenerate: async (call) => {
      call.abortSignal?.throwIfAborted()
      const answer = decideAnswer(call)
      return {
        content: [answerContent(answer)],
        finishReason: finishReasonOf(answer),
        usage: usageOf(call.prompt, answer),
        warnings: [],
        response: responseMetadata()
      }
    },
    doStream: async (call) => {
      call.abortSignal?.throwIfAborted()
      const answer = decideAnswer(call)
      const parts: Array<LanguageModelV4StreamPart> = [
        { type: "stream-start", warnings: [] },
        { type: "response-metadata", ...responseMetadata() },
        ...answerStreamParts(answer),
        { type: "finish", usage: usageOf(call.prompt, answer), finishReason: finishReasonOf(answer) }
      ]
      return { stream: pacedStream(parts, wordDelayMs, call.abortSignal) }
    }
  }
}

// ---------------------------------------------------------------------------
// Deciding what to answer

type ToolCallAnswer = {
  readonly kind: "tool-call"
  readonly toolCallId: string
  readonly toolName: string
  readonly input: string
}
type Answer = { readonly kind: "text"; readonly text: string } | ToolCallAnswer

const textAnswer = (text: string): Answer => ({ kind: "text", text })

const decideAnswer = (call: LanguageModelV4CallOptions): Answer => {
  const toolResults = lastToolResults(call.prompt)
  if (toolResults.length > 0) {
    const reports = toolResults.map((result) =>
      `${result.toolName} returned ${JSON.stringify(toolOutputValue(result.output))}`
    )
    return textAnswer(`${LABEL} ${reports.join("; ")}`)
  }
  const userText = lastUserText(call.prompt)
  const tool = chooseTool(call, userText)
  if (tool !== undefined) {
    return {
      kind: "tool-call",
      toolCallId: `echo-call-${countToolCalls(call.prompt) + 1}`,
      toolName: tool.name,
      input: JSON.stringify(fillSchema(tool.inputSchema, toolArgumentStyle(userText, tool)))
    }
  }
  if (call.responseFormat?.type === "json") {
    const schema: unknown = call.responseFormat.schema
    return textAnswer(
      schema === undefined ? "{}" : JSON.stringify(fillSchema(schema, structuredOutputStyle(userText, schema)))
    )
  }
  return textAnswer(`${LABEL} You said: ${userText}`)
}

type PromptPart = Exclude<LanguageModelV4Message, { role: "system" }>["content"][number]
type ToolResultPart = Extract<PromptPart, { type: "tool-result" }>

const partsOf = (message: LanguageModelV4Message): ReadonlyArray<PromptPart> =>
  message.role === "system" ? [] : message.content

const lastToolResults = (prompt: LanguageModelV4Prompt): ReadonlyArray<ToolResultPart> => {
  const last = prompt.at(-1)
  if (last?.role !== "tool") return []
  return partsOf(last).filter((part): part is ToolResultPart => part.type === "tool-result")
}

const toolOutputValue = (output: LanguageModelV4ToolResultOutput): unknown =>
  output.type === "execution-denied" ? { executionDenied: true, reason: output.reason ?? null } : output.value

const textParts = (message: LanguageModelV4Message): ReadonlyArray<string> =>
  partsOf(message).flatMap((part) => (part.type === "text" ? [part.text] : []))

const lastUserText = (prompt: LanguageModelV4Prompt): string => {
  const lastUser = [...prompt].reverse().find((message) => message.role === "user")
  return lastUser === undefined ? "" : textParts(lastUser).join(" ")
}

const countToolCalls = (prompt: LanguageModelV4Prompt): number =>
  prompt.flatMap(partsOf).filter((part) => part.type === "tool-call").length

const chooseTool = (call: LanguageModelV4CallOptions, userText: string): LanguageModelV4FunctionTool | undefined => {
  const choice = call.toolChoice
  const tools = (call.tools ?? []).filter((tool): tool is LanguageModelV4FunctionTool => tool.type === "function")
  if (choice?.type === "none") return undefined
  if (choice?.type === "tool") return tools.find((tool) => tool.name === choice.toolName)
  return pickTool(userText, tools) ?? (choice?.type === "required" ? tools[0] : undefined)
}

// ---------------------------------------------------------------------------
// Styles of filling a JSON Schema

/**
 * Tool arguments from the text: numbers in order; a string named in the text ("word hello"), else a place
 * for a place-like parameter ("in Paris"), else a quoted string, else what follows the tool's name.
 */
const toolArgumentStyle = (text: string, tool: LanguageModelV4FunctionTool): FillStyle => {
  const numbers = numbersIn(text)
  const quoted = quotedIn(text)
  const place = placeIn(text)
  return {
    root: tool.inputSchema,
    nextNumber: () => numbers.shift() ?? 0,
    stringFor: (name, schema) =>
      valueAfterName(text, name) ??
        (wantsPlace(name, schema)
          ? place ?? quoted.shift() ?? DEFAULT_PLACE
          : quoted.shift() ?? remainderAfter(text, tool.name)),
    enumValue: (values) => mentionedValue(text, values),
    minArrayItems: 0
  }
}

const DEFAULT_PLACE = "Paris"

/** Structured output: the text's numbers in order (then 42), strings it names, fixed examples otherwise. */
const structuredOutputStyle = (text: string, root: unknown): FillStyle => {
  const numbers = numbersIn(text)
  const place = placeIn(text)
  return {
    root,
    nextNumber: () => numbers.shift() ?? 42,
    stringFor: (name, schema) => valueAfterName(text, name) ?? (wantsPlace(name, schema) ? place : undefined),
    enumValue: (values) => mentionedValue(text, values),
    minArrayItems: 1
  }
}

// ---------------------------------------------------------------------------
// Shaping the answer for the V3 specification

const toolCallPart = ({ toolCallId, toolName, input }: ToolCallAnswer): LanguageModelV4ToolCall => ({
  type: "tool-call",
  toolCallId,
  toolName,
  input
})

const answerContent = (answer: Answer): LanguageModelV4Content =>
  answer.kind === "text" ? { type: "text", text: answer.text } : toolCallPart(answer)

const TEXT_ID = "echo-text"

const answerStreamParts = (answer: Answer): Array<LanguageModelV4StreamPart> => {
  if (answer.kind === "text") {
    return [
      { type: "text-start", id: TEXT_ID },
      ...splitWords(answer.text).map((word): LanguageModelV4StreamPart => ({
        type: "text-delta",
        id: TEXT_ID,
        delta: word
      })),
      { type: "text-end", id: TEXT_ID }
    ]
  }
  const id = answer.toolCallId
  return [
    { type: "tool-input-start", id, toolName: answer.toolName },
    { type: "tool-input-delta", id, delta: answer.input },
    { type: "tool-input-end", id },
    toolCallPart(answer)
  ]
}

/** Each word keeps its surrounding whitespace, so the pieces concatenate back to the exact text. */
const splitWords = (text: string): Array<string> => text.match(/\s*\S+\s*|\s+/g) ?? []

const countWords = (text: string): number => text.split(/\s+/).filter((word) => word !== "").length

const promptTexts = (message: LanguageModelV4Message): ReadonlyArray<string> =>
  message.role === "system"
    ? [message.content]
    : partsOf(message).flatMap((part) =>
      part.type === "text"
        ? [part.text]
        : part.type === "tool-result"
        ? [JSON.stringify(toolOutputValue(part.output))]
        : []
    )

const usageOf = (prompt: LanguageModelV4Prompt, answer: Answer): LanguageModelV4Usage => {
  const input = prompt.flatMap(promptTexts).reduce((sum, text) => sum + countWords(text), 0)
  const output = answer.kind === "text" ? countWords(answer.text) : 1
  return {
    inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: output, text: output, reasoning: 0 }
  }
}

const finishReasonOf = (answer: Answer): LanguageModelV4FinishReason => {
  const unified = answer.kind === "text" ? "stop" : "tool-calls"
  return { unified, raw: unified }
}

// The SDK reports `response.modelId` when given (falling back to the bare `modelId`, "echo"), so name ourselves fully.
const responseMetadata = (): Required<LanguageModelV4ResponseMetadata> => ({
  id: `echo-${randomUUID()}`,
  modelId: BUILTIN_MODEL_ID,
  timestamp: new Date()
})

// ---------------------------------------------------------------------------
// Streaming with a pause between words

/** Resolves after `ms`, or at once when `stop` fires; never leaves a timer behind. */
const pause = (ms: number, stop: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (stop.aborted) return resolve()
    const finish = () => {
      clearTimeout(timer)
      stop.removeEventListener("abort", finish)
      resolve()
    }
    const timer = setTimeout(finish, ms)
    stop.addEventListener("abort", finish, { once: true })
  })

/**
 * Emits `parts`, pausing before every word after the first. Aborting `abortSignal` errors the stream
 * with the abort reason (as `fetch` would), which the SDK turns into an orderly `abort`;
 * a consumer's cancel simply stops the emission.
 */
const pacedStream = (
  parts: ReadonlyArray<LanguageModelV4StreamPart>,
  wordDelayMs: number,
  abortSignal: AbortSignal | undefined
): ReadableStream<LanguageModelV4StreamPart> => {
  const halt = new AbortController()
  const haltOnAbort = () => halt.abort()
  const firstWord = parts.findIndex((part) => part.type === "text-delta")
  let cancelled = false

  const emit = async (controller: ReadableStreamDefaultController<LanguageModelV4StreamPart>) => {
    for (const [index, part] of parts.entries()) {
      if (part.type === "text-delta" && index > firstWord) await pause(wordDelayMs, halt.signal)
      if (halt.signal.aborted) break
      controller.enqueue(part)
    }
    abortSignal?.removeEventListener("abort", haltOnAbort)
    if (cancelled) return
    if (abortSignal?.aborted) controller.error(abortSignal.reason)
    else controller.close()
  }

  return new ReadableStream({
    start(controller) {
      abortSignal?.addEventListener("abort", haltOnAbort, { once: true })
      void emit(controller)
    },
    cancel() {
      cancelled = true
      halt.abort()
    }
  })
}
