import type { LanguageModelV3, LanguageModelV3Content, LanguageModelV3Prompt, LanguageModelV3Usage } from "@ai-sdk/provider"
import { wrapLanguageModel } from "ai"
import { Effect, Either, Option, Runtime, type Tracer } from "effect"

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
  const run = <A>(
    name: string,
    prompt: LanguageModelV3Prompt,
    call: () => PromiseLike<A>,
    annotate: (result: A) => Record<string, unknown>
  ) => {
    const effect = Effect.tryPromise({ try: call, catch: (error) => error }).pipe(
      Effect.tap((result) => Effect.annotateCurrentSpan(annotate(result))),
      Effect.withSpan(name, {
        captureStackTrace: false,
        attributes: {
          "entity.type": "agent",
          "entity.id": agentId,
          "gen_ai.system": model.provider,
          "gen_ai.request.model": model.modelId,
          ...promptAttributes(prompt)
        },
        ...(Option.isSome(parent) ? { parent: parent.value } : {})
      }),
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
      // The span ends when the stream opens: it records the prompt; the completion is not known yet.
      wrapStream: ({ doStream, params }) => run("model.stream", params.prompt, doStream, () => ({}))
    }
  })
}
