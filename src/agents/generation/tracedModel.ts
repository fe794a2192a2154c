import type {
  LanguageModelV3,
  LanguageModelV3Content,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage
} from "@ai-sdk/provider"
import { wrapLanguageModel } from "ai"
import { type Clock, Context, Effect, Exit, type Option, Runtime, type Tracer } from "effect"
import { VALUE_CAP } from "../../observability/Redaction.js"

const usageAttributes = (usage: LanguageModelV3Usage) => ({
  "gen_ai.usage.input_tokens": usage.inputTokens.total ?? 0,
  "gen_ai.usage.output_tokens": usage.outputTokens.total ?? 0
})

const partCharacters = (part: { readonly type: string } & Record<string, unknown>): number =>
  typeof part.text === "string" ? part.text.length
    : typeof part.input === "string" ? part.input.length
    : part.output !== undefined ? JSON.stringify(part.output).length
    : 0

/** Characters of the prompt's text: system text, message text and reasoning, tool inputs and results. */
export const promptCharacters = (prompt: LanguageModelV3Prompt): number =>
  prompt.reduce((sum, message) =>
    sum + (typeof message.content === "string"
      ? message.content.length
      : message.content.reduce((n, part) => n + partCharacters(part as never), 0)), 0)

/** Characters of the completion: its text and reasoning, and the inputs of the tools it calls. */
export const completionCharacters = (content: ReadonlyArray<LanguageModelV3Content>): number =>
  content.reduce((sum, part) => sum + partCharacters(part as never), 0)

/** The runtime's tracer and clock, read once per runtime (each read runs a fiber). */
const tracing = new WeakMap<Runtime.Runtime<never>, { readonly tracer: Tracer.Tracer; readonly clock: Clock.Clock }>()

const tracingOf = (runtime: Runtime.Runtime<never>) => {
  let found = tracing.get(runtime)
  if (found === undefined) {
    found = Runtime.runSync(runtime)(Effect.all({ tracer: Effect.tracer, clock: Effect.clock }))
    tracing.set(runtime, found)
  }
  return found
}

/**
 * The model with a span around each call to the provider (`model.generate` / `model.stream`), child of
 * the agent call's span; the SDK calls the model from its own promises, so the parent is passed in
 * and the span is made and ended directly with the runtime's tracer (a fiber per model call to hold
 * it cost more than the span itself). Errors pass through untouched: the SDK decides on retries from them.
 *
 * Spans always record the prompt's and completion's lengths (characters) and token counts; the text
 * itself (`gen_ai.prompt`, `gen_ai.completion`) only with `recordContent`: prompts and completions
 * hold what users wrote, and spans are stored, served, pushed to sockets and exported.
 */
export const tracedModel = (
  model: LanguageModelV3,
  agentId: string,
  parent: Option.Option<Tracer.AnySpan>,
  runtime: Runtime.Runtime<never>,
  recordContent = false
): LanguageModelV3 => {
  const { clock, tracer } = tracingOf(runtime)
  const startSpan = (name: string, prompt: LanguageModelV3Prompt) => {
    const span = tracer.span(name, parent, Context.empty(), [], clock.unsafeCurrentTimeNanos(), "internal", { captureStackTrace: false })
    span.attribute("entity.type", "agent")
    span.attribute("entity.id", agentId)
    span.attribute("gen_ai.system", model.provider)
    span.attribute("gen_ai.request.model", model.modelId)
    span.attribute("gen_ai.prompt.characters", promptCharacters(prompt))
    if (recordContent) span.attribute("gen_ai.prompt", JSON.stringify(prompt))
    return span
  }
  const endSpan = (span: Tracer.Span, exit: Exit.Exit<unknown, unknown>) => {
    if (span.status._tag === "Ended") return
    span.end(clock.unsafeCurrentTimeNanos(), exit)
  }
  return wrapLanguageModel({
    model,
    middleware: {
      specificationVersion: "v3",
      wrapGenerate: async ({ doGenerate, params }) => {
        const span = startSpan("model.generate", params.prompt)
        try {
          const result = await doGenerate()
          for (const [key, count] of Object.entries(usageAttributes(result.usage))) span.attribute(key, count)
          span.attribute("gen_ai.completion.characters", completionCharacters(result.content))
          if (recordContent) span.attribute("gen_ai.completion", JSON.stringify(result.content))
          endSpan(span, Exit.void)
          return result
        } catch (error) {
          endSpan(span, Exit.fail(error))
          throw error
        }
      },
      wrapStream: async ({ doStream, params }) => {
        const span = startSpan("model.stream", params.prompt)
        try {
          const result = await doStream()
          return { ...result, stream: tallied(result.stream, span, recordContent, (exit) => endSpan(span, exit)) }
        } catch (error) {
          endSpan(span, Exit.fail(error))
          throw error
        }
      }
    }
  })
}

/**
 * The stream passed through, while its span (open until the stream ends, fails or is cancelled)
 * counts the completion's characters, takes its token counts from the finish part and, with
 * `recordContent`, keeps its text (up to the value cap: the rest would be cut anyway).
 */
const tallied = (
  stream: ReadableStream<LanguageModelV3StreamPart>,
  span: Tracer.Span,
  recordContent: boolean,
  end: (exit: Exit.Exit<unknown, unknown>) => void
): ReadableStream<LanguageModelV3StreamPart> => {
  const reader = stream.getReader()
  let characters = 0
  let text = ""
  const settle = (exit: Exit.Exit<unknown, unknown>) => {
    span.attribute("gen_ai.completion.characters", characters)
    if (recordContent) span.attribute("gen_ai.completion", text)
    end(exit)
  }
  return new ReadableStream<LanguageModelV3StreamPart>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read()
        if (done) {
          settle(Exit.void)
          return controller.close()
        }
        if (value.type === "text-delta" || value.type === "reasoning-delta" || value.type === "tool-input-delta") {
          characters += value.delta.length
          if (recordContent && text.length < VALUE_CAP) text += value.delta
        } else if (value.type === "finish") {
          for (const [key, count] of Object.entries(usageAttributes(value.usage))) span.attribute(key, count)
        }
        controller.enqueue(value)
      } catch (error) {
        settle(Exit.fail(error))
        controller.error(error)
      }
    },
    cancel(reason) {
      span.attribute("gen_ai.stream.cancelled", true)
      settle(Exit.void)
      return reader.cancel(reason)
    }
  })
}
