import type { LanguageModelV4 } from "@ai-sdk/provider"
import { Effect, Redacted } from "effect"
import type { ModelSettings } from "../../config/ModelSettings.js"
import type { AgentModel } from "../Agent.js"
import { builtinEchoModel } from "./BuiltinEchoModel.js"
import { nodeFetch } from "./nodeFetch.js"

// The key leaves its Redacted wrapper only here, for the provider that sends it.
const revealed = (key: Redacted.Redacted<string> | undefined) => (key === undefined ? undefined : Redacted.value(key))

/** The provider packages (and the zod schemas they build at import) are loaded only for the one configured. */
export const makeModel = (settings: ModelSettings): Effect.Effect<LanguageModelV4> => {
  switch (settings.provider) {
    case "builtin":
      return Effect.sync(() => builtinEchoModel())
    case "openai":
      return Effect.promise(() => import("@ai-sdk/openai")).pipe(
        Effect.map(({ createOpenAI }) =>
          createOpenAI({ apiKey: revealed(settings.apiKey), baseURL: settings.baseUrl, fetch: nodeFetch })(
            settings.model
          )
        )
      )
    case "anthropic":
      return Effect.promise(() => import("@ai-sdk/anthropic")).pipe(
        Effect.map(({ createAnthropic }) =>
          createAnthropic({ apiKey: revealed(settings.apiKey), baseURL: settings.baseUrl, fetch: nodeFetch })(
            settings.model
          )
        )
      )
    case "openai-compatible":
      return Effect.promise(() => import("@ai-sdk/openai-compatible")).pipe(
        Effect.map(({ createOpenAICompatible }) =>
          createOpenAICompatible({
            name: "openai-compatible",
            baseURL: settings.baseUrl!,
            apiKey: revealed(settings.apiKey),
            supportsStructuredOutputs: true,
            includeUsage: true,
            fetch: nodeFetch
          }).chatModel(settings.model)
        )
      )
  }
}

/** The name agents report for a model: `builtin/echo` for the built-in one, else the provider's model id. */
export const modelName = (model: AgentModel): string =>
  model.provider === "builtin" ? `builtin/${model.modelId}` : model.modelId
