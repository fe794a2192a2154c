import type { AgentDefaults } from "../Agent.js"
import type { GenerationOptions } from "../AgentsSchemas.js"

export const DEFAULTS = {
  temperature: 0.7,
  maxOutputTokens: 4000,
  topP: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  contextLimit: 10,
  maxSteps: 5
} as const

export interface CallSettings {
  readonly temperature: number
  readonly maxOutputTokens: number
  readonly topP?: number
  readonly frequencyPenalty?: number
  readonly presencePenalty?: number
  readonly seed?: number
  readonly stopSequences?: Array<string>
  readonly providerOptions?: Record<string, Record<string, any>>
  /** 0 under a fallback policy (see modelChoice.ts); the SDK's default (2) otherwise. */
  readonly maxRetries?: number
}

/**
 * The request's options over the agent's defaults over the service's. topP 1 and penalties 0 are what
 * providers do anyway, so they are sent only when they differ (some providers refuse topP beside
 * temperature).
 */
export const resolveSettings = (options: GenerationOptions, defaults: AgentDefaults = {}) => {
  const pick = <K extends keyof typeof DEFAULTS>(key: K): number =>
    (options as Record<string, number | undefined>)[key] ?? (defaults as Record<string, number | undefined>)[key] ??
      DEFAULTS[key]
  const topP = pick("topP")
  const frequencyPenalty = pick("frequencyPenalty")
  const presencePenalty = pick("presencePenalty")
  const settings: CallSettings = {
    temperature: pick("temperature"),
    maxOutputTokens: pick("maxOutputTokens"),
    ...(topP !== 1 ? { topP } : {}),
    ...(frequencyPenalty !== 0 ? { frequencyPenalty } : {}),
    ...(presencePenalty !== 0 ? { presencePenalty } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(options.stopSequences !== undefined ? { stopSequences: [...options.stopSequences] } : {}),
    ...(options.providerOptions !== undefined ? { providerOptions: options.providerOptions as any } : {})
  }
  return { settings, maxSteps: pick("maxSteps"), contextLimit: pick("contextLimit") }
}
