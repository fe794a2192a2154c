/** The model a call runs with: the agent's one (traced), or its list under its fallback policy. */
import type { LanguageModelV4 } from "@ai-sdk/provider"
import { Effect, type Option, type Runtime, type Tracer } from "effect"
import { type AgentCallContext, type AgentDefinition, type AgentModel, type Dynamic, resolveDynamic } from "../Agent.js"
import { fallbackModel, modelRef } from "../models/fallbackModel.js"
import { modelName } from "../models/providerModel.js"
import { tracedModel } from "./tracedModel.js"

export type ResolvedModel = AgentModel | ReadonlyArray<AgentModel>

export const isModelList = <A>(model: A | ReadonlyArray<A>): model is ReadonlyArray<A> => Array.isArray(model)

/** Whether the call goes through the fallback wrapper (then the SDK's own retries are off: `maxRetries: 0`). */
export const usesFallback = (agent: AgentDefinition, model: ResolvedModel): boolean =>
  isModelList(model) || agent.fallback !== undefined

/** The agent's model, or each model of its list, resolved for the call. */
export const resolveModels = (
  models: Dynamic<AgentModel, unknown> | ReadonlyArray<Dynamic<AgentModel, unknown>>,
  call: AgentCallContext
): Effect.Effect<ResolvedModel, unknown> =>
  isModelList(models) ? Effect.all(models.map((model) => resolveDynamic(model, call))) : resolveDynamic(models, call)

/** One traced model per list element (a `chat {model}` span per attempt), behind the fallback wrapper. */
export const modelFor = (
  env: { readonly runtime: Runtime.Runtime<never>; readonly recordContent?: boolean | undefined },
  agent: AgentDefinition,
  model: ResolvedModel,
  parent: Option.Option<Tracer.AnySpan>
): LanguageModelV4 => {
  const list = isModelList(model) ? model : [model]
  return fallbackModel(
    list.map((one) => ({
      model: tracedModel(one, agent.id, parent, env.runtime, env.recordContent),
      ref: modelRef(one)
    })),
    agent.fallback ?? {},
    agent.id,
    parent,
    env.runtime
  )
}

/** The agent's model as its summary names it; a list's names in the order they are tried. */
export const modelSummary = (model: AgentDefinition["model"], defaultModel: AgentModel): string => {
  const name = (one: Dynamic<AgentModel, unknown>) => typeof one === "function" ? "(dynamic)" : modelName(one)
  return model === undefined ? modelName(defaultModel) : isModelList(model) ? model.map(name).join(", ") : name(model)
}
