import { Config, Either, Option } from "effect"
import { parsed } from "./env.js"

/** The agents' byte bounds (issue #42): fields of the config file's `agents`, variables, defaults. */
export interface AgentLimits {
  /**
   * A call's `input` (or chat `messages`) as JSON at most (AGENT_INPUT_MAX_BYTES or `agents.maxInputBytes`,
   * 1 MiB), on every door; past it a 400 naming the setting.
   */
  readonly maxInputBytes: number
  /**
   * The conversation memory one call loads at most (AGENT_CONTEXT_MAX_BYTES or `agents.contextMaxBytes`,
   * 2 MiB: a largest input and its answer), as stored JSON: the newest messages that fit, within `contextLimit`.
   */
  readonly contextMaxBytes: number
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = { maxInputBytes: 1024 * 1024, contextMaxBytes: 2 * 1024 * 1024 }

/** A byte count from the environment: a positive integer; anything else fails start-up. */
const bytesFrom = (name: string) =>
  parsed(
    name,
    (raw) =>
      /^\d+$/.test(raw) && Number(raw) > 0
        ? Either.right(Number(raw))
        : Either.left(`${name}: must be a positive integer (bytes), got "${raw}"`)
  )

export const agentLimitsEnvironment = Config.all({
  maxInputBytes: bytesFrom("AGENT_INPUT_MAX_BYTES"),
  contextMaxBytes: bytesFrom("AGENT_CONTEXT_MAX_BYTES")
})

/** The bounds from the config file's `agents` and the environment (which wins). */
export const resolveAgentLimits = (
  file: { readonly maxInputBytes?: number | undefined; readonly contextMaxBytes?: number | undefined } | undefined,
  env: Config.Config.Success<typeof agentLimitsEnvironment>
): AgentLimits => ({
  maxInputBytes: Option.getOrElse(env.maxInputBytes, () => file?.maxInputBytes ?? DEFAULT_AGENT_LIMITS.maxInputBytes),
  contextMaxBytes: Option.getOrElse(
    env.contextMaxBytes,
    () => file?.contextMaxBytes ?? DEFAULT_AGENT_LIMITS.contextMaxBytes
  )
})
