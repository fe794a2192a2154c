import type { LanguageModelV3, LanguageModelV3Usage } from "@ai-sdk/provider"
import { wrapLanguageModel } from "ai"
import { Effect, Either, Option, Runtime, type Tracer } from "effect"

const usageAttributes = (usage: LanguageModelV3Usage) => ({
  "gen_ai.usage.input_tokens": usage.inputTokens.total ?? 0,
  "gen_ai.usage.output_tokens": usage.outputTokens.total ?? 0
})

/**
 * The model with a span around each call to the provider (`model.generate` / `model.stream`), child of
 * the agent call's span; the SDK calls the model from its own promises, so the parent is passed in.
 * Errors pass through untouched: the SDK decides on retries from them.
 */
export const tracedModel = (
  model: LanguageModelV3,
  agentId: string,
  parent: Option.Option<Tracer.AnySpan>,
  runtime: Runtime.Runtime<never>
): LanguageModelV3 => {
  const run = <A>(name: string, call: () => PromiseLike<A>, annotate: (result: A) => Record<string, unknown>) => {
    const effect = Effect.tryPromise({ try: call, catch: (error) => error }).pipe(
      Effect.tap((result) => Effect.annotateCurrentSpan(annotate(result))),
      Effect.withSpan(name, {
        captureStackTrace: false,
        attributes: {
          "entity.type": "agent",
          "entity.id": agentId,
          "gen_ai.system": model.provider,
          "gen_ai.request.model": model.modelId
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
      wrapGenerate: ({ doGenerate }) => run("model.generate", doGenerate, (result) => usageAttributes(result.usage)),
      wrapStream: ({ doStream }) => run("model.stream", doStream, () => ({}))
    }
  })
}
