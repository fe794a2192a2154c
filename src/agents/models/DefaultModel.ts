/**
 * `models/`: the models a call runs with: the default one from configuration, the providers', the
 * built-in echo model, and the fallback wrapper over a list. Imports the agent's model type,
 * configuration, the JSON Schema helpers and the model metrics; nothing of generation or above.
 */
import { Context, Layer } from "effect"
import type { ModelSettings } from "../../config/ModelSettings.js"
import type { AgentModel } from "../Agent.js"
import { makeModel } from "./providerModel.js"

/** The model agents use unless they name their own. */
export class DefaultModel extends Context.Tag("DefaultModel")<DefaultModel, AgentModel>() {}

export const DefaultModelLive = (settings: ModelSettings) => Layer.effect(DefaultModel, makeModel(settings))
