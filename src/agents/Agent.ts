import type { LanguageModelV3 } from "@ai-sdk/provider"
import { checkDefinitionId } from "../core/definitionId.js"
import type { Tool } from "../tools/Tool.js"
import type { GenerationOptions } from "./AgentsSchemas.js"

/** What an agent knows of the call it is answering. */
export interface AgentCallContext {
  /** The caller's `options.context` (empty when none was sent). */
  readonly context: Readonly<Record<string, unknown>>
  /** The authenticated user, or null. */
  readonly user: unknown
  /** Under authentication, the caller's id (the conversation's owner); without it, the body's `userId`. */
  readonly userId?: string | undefined
  readonly conversationId?: string | undefined
  /** Under authentication: the user the call's conversation and history belong to (null: anonymous). */
  readonly owner?: { readonly userId: string | null } | undefined
}

/** A value, or a function of the call that computes it. */
export type Dynamic<A> = A | ((call: AgentCallContext) => A | PromiseLike<A>)

export type AgentDefaults = Pick<
  GenerationOptions,
  "maxSteps" | "temperature" | "maxOutputTokens" | "topP" | "frequencyPenalty" | "presencePenalty" | "contextLimit"
>

export interface AgentDefinition {
  readonly id: string
  readonly name: string
  /** What the agent is for; shown as its description. */
  readonly purpose: string
  readonly instructions: Dynamic<string>
  /** Defaults to the service's model (AI_PROVIDER / AI_MODEL). */
  readonly model?: Dynamic<LanguageModelV3> | undefined
  readonly tools?: ReadonlyArray<Tool> | undefined
  /** Narrows `tools` per call, by name (for example by the caller's tier). */
  readonly activeTools?: ((call: AgentCallContext) => ReadonlyArray<string>) | undefined
  readonly subAgents?: ReadonlyArray<AgentDefinition> | undefined
  /** Keep conversation memory in the SQL store (used when a call names a conversationId). */
  readonly memory?: boolean | undefined
  readonly defaults?: AgentDefaults | undefined
}

export const defineAgent = (definition: AgentDefinition): AgentDefinition => {
  checkDefinitionId("Agent id", definition.id)
  return definition
}

export const resolveDynamic = <A>(value: Dynamic<A>, call: AgentCallContext): Promise<A> =>
  Promise.resolve(typeof value === "function" ? (value as (call: AgentCallContext) => A | PromiseLike<A>)(call) : value)
