import { Config, Either, Option, Redacted } from "effect"
import { type Env, invalid, readEnv, secret, variable } from "./env.js"

export const PROVIDERS = ["builtin", "openai", "anthropic", "openai-compatible"] as const
export type ProviderName = (typeof PROVIDERS)[number]

export interface ModelSettings {
  readonly provider: ProviderName
  readonly model: string
  readonly baseUrl?: string | undefined
  readonly apiKey?: Redacted.Redacted<string> | undefined
}

const DEFAULT_MODELS: Record<ProviderName, string> = {
  builtin: "echo",
  openai: "gpt-4o-mini",
  anthropic: "claude-3-5-haiku-latest",
  "openai-compatible": "default"
}

const isProvider = (name: string): name is ProviderName => (PROVIDERS as ReadonlyArray<string>).includes(name)
const filled = (key: Option.Option<Redacted.Redacted<string>>) => Option.isSome(key) && Redacted.value(key.value) !== ""

/**
 * The service's model from AI_PROVIDER, AI_MODEL, AI_BASE_URL and AI_API_KEY (or OPENAI_API_KEY /
 * ANTHROPIC_API_KEY for those providers); without AI_PROVIDER a base URL, then a detected key, else
 * the built-in model. The error says which variable is wrong.
 */
export const modelSettingsConfig: Config.Config<ModelSettings> = Config.mapOrFail(
  Config.all({
    provider: variable("AI_PROVIDER"),
    model: variable("AI_MODEL"),
    baseUrl: variable("AI_BASE_URL"),
    aiKey: secret("AI_API_KEY"),
    openaiKey: secret("OPENAI_API_KEY"),
    anthropicKey: secret("ANTHROPIC_API_KEY")
  }),
  (env) => {
    const baseUrl = Option.getOrUndefined(env.baseUrl)
    const provider = Option.getOrElse(
      env.provider,
      () =>
        baseUrl
          ? "openai-compatible"
          : filled(env.openaiKey)
          ? "openai"
          : filled(env.anthropicKey)
          ? "anthropic"
          : "builtin"
    )
    if (!isProvider(provider)) {
      return invalid("AI_PROVIDER", `AI_PROVIDER: must be one of ${PROVIDERS.join(", ")}, got "${provider}"`)
    }
    const apiKey = Option.orElse(
      env.aiKey,
      () => provider === "openai" ? env.openaiKey : provider === "anthropic" ? env.anthropicKey : Option.none()
    )
    if (provider === "openai-compatible" && !baseUrl) {
      return invalid(
        "AI_BASE_URL",
        "AI_BASE_URL: required with AI_PROVIDER=openai-compatible (e.g. http://localhost:11434/v1)"
      )
    }
    if ((provider === "openai" || provider === "anthropic") && !filled(apiKey) && !baseUrl) {
      return invalid("AI_API_KEY", `AI_API_KEY: required with AI_PROVIDER=${provider}`)
    }
    return Either.right({
      provider,
      model: Option.getOrElse(env.model, () => DEFAULT_MODELS[provider]),
      baseUrl,
      apiKey: Option.getOrUndefined(apiKey)
    })
  }
)

/** `modelSettingsConfig` read from an environment record. */
export const resolveModelSettings = (env: Env): Either.Either<ModelSettings, string> =>
  readEnv(modelSettingsConfig, env)
