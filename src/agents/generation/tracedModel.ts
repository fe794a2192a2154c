import type {
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FinishReason,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage
} from "@ai-sdk/provider"
import { wrapLanguageModel } from "ai"
import { Cause, type Clock, Context, Effect, Exit, type Option, Runtime, type Tracer } from "effect"
import { VALUE_CAP } from "../../observability/Redaction.js"
import type { AgentModel } from "../Agent.js"

const usageAttributes = (usage: LanguageModelV4Usage) => ({
  "gen_ai.usage.input_tokens": usage.inputTokens.total ?? 0,
  "gen_ai.usage.output_tokens": usage.outputTokens.total ?? 0
})

/** `gen_ai.provider.name` from the SDK's provider id ("openai.chat" is OpenAI's chat API). */
export const providerName = (provider: string): string => provider.split(".")[0] ?? provider

/** The call's settings, under the OpenTelemetry GenAI names (only those the call sets). */
const requestAttributes = (params: LanguageModelV4CallOptions): Record<string, unknown> => {
  const attributes: Record<string, unknown> = {
    "gen_ai.output.type": params.responseFormat?.type === "json" ? "json" : "text"
  }
  if (params.temperature !== undefined) attributes["gen_ai.request.temperature"] = params.temperature
  if (params.maxOutputTokens !== undefined) attributes["gen_ai.request.max_tokens"] = params.maxOutputTokens
  if (params.topP !== undefined) attributes["gen_ai.request.top_p"] = params.topP
  if (params.topK !== undefined) attributes["gen_ai.request.top_k"] = params.topK
  if (params.presencePenalty !== undefined) attributes["gen_ai.request.presence_penalty"] = params.presencePenalty
  if (params.frequencyPenalty !== undefined) attributes["gen_ai.request.frequency_penalty"] = params.frequencyPenalty
  if (params.seed !== undefined) attributes["gen_ai.request.seed"] = params.seed
  if (params.stopSequences?.length) attributes["gen_ai.request.stop_sequences"] = params.stopSequences
  return attributes
}

/**
 * An array attribute as OpenTelemetry carries it (string[]): Effect's `span.attribute` would turn it
 * into one string, so it is set on the OpenTelemetry span underneath when there is one.
 */
const setArray = (span: Tracer.Span, key: string, values: ReadonlyArray<string>) => {
  const otel = (span as { readonly span?: { setAttribute?: (key: string, value: Array<string>) => unknown } }).span
  if (typeof otel?.setAttribute === "function") otel.setAttribute(key, [...values])
  else span.attribute(key, values.join(","))
}

const errorType = (error: unknown): string =>
  error instanceof Error ? (error.name === "Error" ? error.constructor.name : error.name) : "_OTHER"

const partCharacters = (part: { readonly type: string } & Record<string, unknown>): number =>
  typeof part.text === "string" ?
    part.text.length
    : typeof part.input === "string" ?
    part.input.length
    : part.output !== undefined ?
    JSON.stringify(part.output).length
    : 0

/** Characters of the prompt's text: system text, message text and reasoning, tool inputs and results. */
export const promptCharacters = (prompt: LanguageModelV4Prompt): number =>
  prompt.reduce((sum, message) =>
    sum + (typeof message.content === "string"
      ? message.content.length
      : message.content.reduce((n, part) => n + partCharacters(part as never), 0)), 0)

/** Characters of the completion: its text and reasoning, and the inputs of the tools it calls. */
export const completionCharacters = (content: ReadonlyArray<LanguageModelV4Content>): number =>
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
 * The model with a span around each call to the provider ("chat {model}", kind client, with the
 * OpenTelemetry GenAI attributes: operation, provider, request settings, response model and id,
 * finish reasons, token usage; `error.type` when it fails), child of
 * the agent call's span; the SDK calls the model from its own promises, so the parent is passed in
 * and the span is made and ended directly with the runtime's tracer (a fiber per model call to hold
 * it cost more than the span itself). Errors pass through untouched: the SDK decides on retries from them.
 *
 * Spans always record the prompt's and completion's lengths (characters) and token counts; the text
 * itself (`gen_ai.prompt`, `gen_ai.completion`) only with `recordContent`: prompts and completions
 * hold what users wrote, and spans are stored, served, pushed to sockets and exported.
 * A 6-line model (`LanguageModelV3`) comes out as a `LanguageModelV4`: `wrapLanguageModel` adapts it.
 */
export const tracedModel = (
  model: AgentModel,
  agentId: string,
  parent: Option.Option<Tracer.AnySpan>,
  runtime: Runtime.Runtime<never>,
  recordContent = false
): LanguageModelV4 => {
  const { clock, tracer } = tracingOf(runtime)
  const provider = providerName(model.provider)
  // Named and typed as the GenAI semantic conventions say: "{operation} {model}", a client call.
  const spanName = `chat ${model.modelId}`
  const startSpan = (params: LanguageModelV4CallOptions) => {
    const span = tracer.span(spanName, parent, Context.empty(), [], clock.unsafeCurrentTimeNanos(), "client", {
      captureStackTrace: false
    })
    span.attribute("entity.type", "agent")
    span.attribute("entity.id", agentId)
    span.attribute("gen_ai.operation.name", "chat")
    span.attribute("gen_ai.provider.name", provider)
    // The name before semconv 1.37, still read by some backends.
    span.attribute("gen_ai.system", provider)
    span.attribute("gen_ai.request.model", model.modelId)
    span.attribute("gen_ai.agent.id", agentId)
    for (const [key, value] of Object.entries(requestAttributes(params))) {
      if (Array.isArray(value)) setArray(span, key, value)
      else span.attribute(key, value)
    }
    span.attribute("gen_ai.prompt.characters", promptCharacters(params.prompt))
    if (recordContent) span.attribute("gen_ai.prompt", JSON.stringify(params.prompt))
    return span
  }
  const endSpan = (span: Tracer.Span, exit: Exit.Exit<unknown, unknown>) => {
    if (span.status._tag === "Ended") return
    if (exit._tag === "Failure") span.attribute("error.type", errorType(Cause.squash(exit.cause)))
    span.end(clock.unsafeCurrentTimeNanos(), exit)
  }
  const respond = (
    span: Tracer.Span,
    response: { readonly id?: string | undefined; readonly modelId?: string | undefined } | undefined
  ) => {
    span.attribute("gen_ai.response.model", response?.modelId ?? model.modelId)
    if (response?.id !== undefined) span.attribute("gen_ai.response.id", response.id)
  }
  const finished = (span: Tracer.Span, finishReason: LanguageModelV4FinishReason, usage: LanguageModelV4Usage) => {
    setArray(span, "gen_ai.response.finish_reasons", [finishReason.unified])
    for (const [key, count] of Object.entries(usageAttributes(usage))) span.attribute(key, count)
  }
  return wrapLanguageModel({
    model,
    middleware: {
      specificationVersion: "v4",
      wrapGenerate: async ({ doGenerate, params }) => {
        const span = startSpan(params)
        try {
          const result = await doGenerate()
          respond(span, result.response)
          finished(span, result.finishReason, result.usage)
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
        const span = startSpan(params)
        span.attribute("gen_ai.request.stream", true)
        try {
          const result = await doStream()
          return {
            ...result,
            stream: tallied(result.stream, span, recordContent, {
              respond: (metadata) => respond(span, metadata),
              finished: (reason, usage) => finished(span, reason, usage),
              end: (exit) => endSpan(span, exit)
            })
          }
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
  stream: ReadableStream<LanguageModelV4StreamPart>,
  span: Tracer.Span,
  recordContent: boolean,
  on: {
    readonly respond: (
      metadata: { readonly id?: string | undefined; readonly modelId?: string | undefined } | undefined
    ) => void
    readonly finished: (reason: LanguageModelV4FinishReason, usage: LanguageModelV4Usage) => void
    readonly end: (exit: Exit.Exit<unknown, unknown>) => void
  }
): ReadableStream<LanguageModelV4StreamPart> => {
  const reader = stream.getReader()
  let characters = 0
  let text = ""
  let responded = false
  const settle = (exit: Exit.Exit<unknown, unknown>) => {
    if (!responded) on.respond(undefined)
    span.attribute("gen_ai.completion.characters", characters)
    if (recordContent) span.attribute("gen_ai.completion", text)
    on.end(exit)
  }
  return new ReadableStream<LanguageModelV4StreamPart>({
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
        } else if (value.type === "response-metadata") {
          responded = true
          on.respond(value)
        } else if (value.type === "finish") {
          on.finished(value.finishReason, value.usage)
        } else if (value.type === "error") {
          span.attribute("error.type", errorType(value.error))
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
