import type { LanguageModelV3, LanguageModelV4 } from "@ai-sdk/provider"
import { Effect } from "effect"
import { checkDefinitionId } from "../core/definitionId.js"
import { fromUserResult, type ResultContext } from "../core/userCode.js"
import type { Tool } from "../tools/Tool.js"
import type { GenerationOptions, Usage } from "./AgentsSchemas.js"
import type { AgentCallContext } from "./callContext.js"
import type { InputGuardrail, OutputGuardrail } from "./guardrails/Guardrail.js"
import type { FallbackPolicy } from "./models/fallbackModel.js"
import { UPDATE_WORKING_MEMORY, type WorkingMemoryConfig } from "./workingMemory/config.js"

export type { AgentCallContext } from "./callContext.js"

/**
 * A model object from an AI SDK provider: `LanguageModelV4` from the 7 line's packages
 * (`@ai-sdk/openai` 4.x, `@ai-sdk/anthropic` 4.x, ...), or `LanguageModelV3` from the 6 line's, which
 * `ai` 7 still runs.
 */
export type AgentModel = LanguageModelV4 | LanguageModelV3

/** A value, or a function of the call that computes it (a value, a Promise or an Effect requiring `R`). */
export type Dynamic<A, R = never> = A | ((call: AgentCallContext) => A | PromiseLike<A> | Effect.Effect<A, unknown, R>)

export type AgentDefaults = Pick<
  GenerationOptions,
  "maxSteps" | "temperature" | "maxOutputTokens" | "topP" | "frequencyPenalty" | "presencePenalty" | "contextLimit"
>

/**
 * An agent; `R` is what its tools, sub-agents and dynamic parts require (the services of your own they
 * use, provided by the layer you give `ServiceLive`/`ServicesLive`), `never` when nothing.
 */
export interface AgentDefinition<out R = never> {
  readonly id: string
  readonly name: string
  /** What the agent is for; shown as its description. */
  readonly purpose: string
  readonly instructions: Dynamic<string, R>
  /**
   * Defaults to the service's model (AI_PROVIDER / AI_MODEL). A list is tried in order: a retryable
   * failure (connection, 408, 429, 5xx, no first token in time) is retried, then the next model answers.
   */
  readonly model?: Dynamic<AgentModel, R> | ReadonlyArray<Dynamic<AgentModel, R>> | undefined
  /** Retries, back-off and first-token timeout of `model` (a list gets the defaults without it). */
  readonly fallback?: FallbackPolicy | undefined
  readonly tools?: ReadonlyArray<Tool<R>> | undefined
  /** Narrows `tools` per call, by name (for example by the caller's tier). */
  readonly activeTools?: ((call: AgentCallContext) => ReadonlyArray<string>) | undefined
  readonly subAgents?: ReadonlyArray<AgentDefinition<R>> | undefined
  /** Keep conversation memory in the SQL store (used when a call names a conversationId). */
  readonly memory?: boolean | undefined
  /** A small structured record per user or per conversation, in the instructions, replaced by the `update_working_memory` tool. */
  readonly workingMemory?: WorkingMemoryConfig | undefined
  readonly defaults?: AgentDefaults | undefined
  /** Run in order on each message the client sent, before the model sees it: pass, rewrite or block (422). */
  readonly inputGuardrails?: ReadonlyArray<InputGuardrail<R>> | undefined
  /** Run in order on the answer (as it streams, with a hold-back) and on each tool result the client receives: pass, rewrite or block. */
  readonly outputGuardrails?: ReadonlyArray<OutputGuardrail<R>> | undefined
  /** Before the model is called (awaited; a failure is logged). See AgentHooks. */
  readonly onStart?: AgentHook<AgentStartEvent> | undefined
  /** Once the call's history entry is committed, whatever its status (detached, bounded to 5 s). */
  readonly onEnd?: AgentHook<AgentEndEvent> | undefined
  /** Before each of its tools runs (awaited). */
  readonly onToolStart?: AgentHook<AgentToolStartEvent> | undefined
  /** After each of its tools ran, with its output or error (awaited). */
  readonly onToolEnd?: AgentHook<AgentToolEndEvent> | undefined
  /** Once a failed call's history entry is committed, before onEnd (detached, bounded to 5 s). */
  readonly onError?: AgentHook<AgentErrorEvent> | undefined
}

/** What every hook of an agent is told of the call. */
export interface AgentHookEvent {
  readonly agentId: string
  /** The call's history entry id. */
  readonly callId: string
  readonly call: AgentCallContext
  readonly conversationId: string | undefined
}

export type AgentStartEvent = AgentHookEvent

export interface AgentEndEvent extends AgentHookEvent {
  /** `blocked`: a guardrail stopped the call's answer. */
  readonly status: "completed" | "error" | "cancelled" | "blocked"
  readonly usage: Usage | undefined
  /** The answer's text (an object call's JSON), when it completed. */
  readonly output: string | undefined
}

export interface AgentToolStartEvent extends AgentHookEvent {
  readonly toolName: string
  readonly toolCallId: string
  readonly input: unknown
}

export interface AgentToolEndEvent extends AgentToolStartEvent {
  /** What the tool returned (absent when it failed). */
  readonly output?: unknown
  /** Why it failed (absent when it succeeded). */
  readonly error?: string | undefined
}

export interface AgentErrorEvent extends AgentHookEvent {
  readonly error: string
}

/**
 * A hook: returns a value, a Promise or an Effect (whose `R` joins the agent's, see AgentRequirements).
 * What it returns is ignored; a failure, a throw or a timeout is logged and never fails the call.
 */
export type AgentHook<E> = (event: E) => unknown

/** The field `K` of `D` if it has one (not the constraint's type when absent). */
type Field<D, K extends string> = K extends keyof D ? D[K] : never

type DynamicRequirements<X> = X extends (call: AgentCallContext) => infer Ret ? ResultContext<Ret> : never

type HookRequirements<X> = X extends (event: never) => infer Ret ? ResultContext<Ret> : never

type ModelRequirements<X> = X extends ReadonlyArray<infer E> ? DynamicRequirements<E> : DynamicRequirements<X>

type ElementRequirements<T> = T extends ReadonlyArray<infer E> ? E extends Tool<infer R> ? R
  : E extends AgentDefinition<infer R> ? R
  : E extends InputGuardrail<infer R> ? R
  : E extends OutputGuardrail<infer R> ? R
  : never
  : never

/** What an agent's definition requires: its dynamic parts', its hooks', its tools', its sub-agents' and its guardrails' `R`. */
export type AgentRequirements<D extends AgentDefinition<unknown>> =
  | DynamicRequirements<Field<D, "instructions">>
  | ModelRequirements<Field<D, "model">>
  | ElementRequirements<Field<D, "tools">>
  | ElementRequirements<Field<D, "subAgents">>
  | ElementRequirements<Field<D, "inputGuardrails">>
  | ElementRequirements<Field<D, "outputGuardrails">>
  | HookRequirements<Field<D, "onStart">>
  | HookRequirements<Field<D, "onEnd">>
  | HookRequirements<Field<D, "onToolStart">>
  | HookRequirements<Field<D, "onToolEnd">>
  | HookRequirements<Field<D, "onError">>

/** An agent; its type carries what its parts require (AgentRequirements). */
export const defineAgent = <const D extends AgentDefinition<unknown>>(
  definition: D
): AgentDefinition<AgentRequirements<D>> => {
  checkDefinitionId("Agent id", definition.id)
  if (definition.workingMemory !== undefined && definition.tools?.some((tool) => tool.name === UPDATE_WORKING_MEMORY)) {
    throw new Error(`Agent ${definition.id}: a tool named ${UPDATE_WORKING_MEMORY} would hide its working memory's own`)
  }
  if (Array.isArray(definition.model) && definition.model.length === 0) {
    throw new Error(`Agent ${definition.id}: an empty model list`)
  }
  // Its requirements are read off its parts: the same object, typed by what it holds.
  return definition as AgentDefinition<unknown> as AgentDefinition<never>
}

/** A dynamic part's value for a call; what its function throws or fails with is the error. */
export const resolveDynamic = <A>(value: Dynamic<A, unknown>, call: AgentCallContext): Effect.Effect<A, unknown> =>
  typeof value === "function"
    ? Effect.flatMap(
      Effect.try({
        try: () => (value as (call: AgentCallContext) => A | PromiseLike<A>)(call),
        catch: (error) => error
      }),
      fromUserResult
    )
    : Effect.succeed(value)
