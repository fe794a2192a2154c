import { Context, Layer } from "effect"
import type { ModelSettings } from "../../config/ModelSettings.js"
import type { AgentModel } from "../Agent.js"
import { makeModel } from "./providerModel.js"

/** The model agents use unless they name their own. */
export class DefaultModel extends Context.Tag("DefaultModel")<DefaultModel, AgentModel>() {}

export const DefaultModelLive = (settings: ModelSettings) => Layer.effect(DefaultModel, makeModel(settings))
