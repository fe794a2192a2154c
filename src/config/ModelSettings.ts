import { Either, Redacted } from "effect"

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

type Env = Readonly<Record<string, string | undefined>>

/** Which provider is meant when AI_PROVIDER is not set: a base URL, then a detected key, else builtin. */
const detectProvider = (env: Env): ProviderName =>
  env.AI_BASE_URL ? "openai-compatible" : env.OPENAI_API_KEY ? "openai" : env.ANTHROPIC_API_KEY ? "anthropic" : "builtin"

/**
 * The service's model from AI_PROVIDER, AI_MODEL, AI_BASE_URL and AI_API_KEY (or OPENAI_API_KEY /
 * ANTHROPIC_API_KEY for those providers). The error says which variable is wrong.
 */
export const resolveModelSettings = (env: Env): Either.Either<ModelSettings, string> => {
  const provider = (env.AI_PROVIDER ?? detectProvider(env)) as ProviderName
  if (!PROVIDERS.includes(provider)) {
    return Either.left(`AI_PROVIDER: must be one of ${PROVIDERS.join(", ")}, got "${env.AI_PROVIDER}"`)
  }
  const apiKey = env.AI_API_KEY ??
    (provider === "openai" ? env.OPENAI_API_KEY : provider === "anthropic" ? env.ANTHROPIC_API_KEY : undefined)
  if (provider === "openai-compatible" && !env.AI_BASE_URL) {
    return Either.left("AI_BASE_URL: required with AI_PROVIDER=openai-compatible (e.g. http://localhost:11434/v1)")
  }
  if ((provider === "openai" || provider === "anthropic") && !apiKey && !env.AI_BASE_URL) {
    return Either.left(`AI_API_KEY: required with AI_PROVIDER=${provider}`)
  }
  return Either.right({
    provider,
    model: env.AI_MODEL ?? DEFAULT_MODELS[provider],
    baseUrl: env.AI_BASE_URL,
    apiKey: apiKey === undefined ? undefined : Redacted.make(apiKey)
  })
}
