import type {
  LanguageModelV3,
  LanguageModelV3Content,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage
} from "@ai-sdk/provider"
import { wrapLanguageModel } from "ai"
import { Clock, Effect, Either, Exit, Option, Runtime, type Tracer } from "effect"
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

/**
 * The model with a span around each call to the provider (`model.generate` / `model.stream`), child of
 * the agent call's span; the SDK calls the model from its own promises, so the parent is passed in.
 * Errors pass through untouched: the SDK decides on retries from them.
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
  const promptAttributes = (prompt: LanguageModelV3Prompt) => ({
    "gen_ai.prompt.characters": promptCharacters(prompt),
    ...(recordContent ? { "gen_ai.prompt": JSON.stringify(prompt) } : {})
  })
  const completionAttributes = (content: ReadonlyArray<LanguageModelV3Content>) => ({
    "gen_ai.completion.characters": completionCharacters(content),
    ...(recordContent ? { "gen_ai.completion": JSON.stringify(content) } : {})
  })
  const spanOptions = (prompt: LanguageModelV3Prompt) => ({
    captureStackTrace: false,
    attributes: {
      "entity.type": "agent",
      "entity.id": agentId,
      "gen_ai.system": model.provider,
      "gen_ai.request.model": model.modelId,
      ...promptAttributes(prompt)
    },
    ...(Option.isSome(parent) ? { parent: parent.value } : {})
  })
  const run = <A>(
    name: string,
    prompt: LanguageModelV3Prompt,
    call: () => PromiseLike<A>,
    annotate: (result: A) => Record<string, unknown>
  ) => {
    const effect = Effect.tryPromise({ try: call, catch: (error) => error }).pipe(
      Effect.tap((result) => Effect.annotateCurrentSpan(annotate(result))),
      Effect.withSpan(name, spanOptions(prompt)),
      Effect.either
    )
    return Runtime.runPromise(runtime)(effect).then(Either.getOrThrowWith((error) => error))
  }
  return wrapLanguageModel({
    model,
    middleware: {
      specificationVersion: "v3",
      wrapGenerate: ({ doGenerate, params }) =>
        run("model.generate", params.prompt, doGenerate, (result) => ({
          ...usageAttributes(result.usage),
          ...completionAttributes(result.content)
        })),
      wrapStream: async ({ doStream, params }) => {
        const span = Runtime.runSync(runtime)(Effect.makeSpan("model.stream", spanOptions(params.prompt)))
        let ended = false
        const end = (exit: Exit.Exit<unknown, unknown>) => {
          if (ended) return
          ended = true
          span.end(Runtime.runSync(runtime)(Clock.currentTimeNanos), exit)
        }
        try {
          const result = await doStream()
          return { ...result, stream: tallied(result.stream, span, recordContent, end) }
        } catch (error) {
          end(Exit.fail(error))
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
