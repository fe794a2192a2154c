import type { LanguageModelV3 } from "@ai-sdk/provider"
import { Context, Layer } from "effect"
import type { ModelSettings } from "../../config/ModelSettings.js"
import { makeModel } from "./providerModel.js"

/** The model agents use unless they name their own. */
export class DefaultModel extends Context.Tag("DefaultModel")<DefaultModel, LanguageModelV3>() {}

export const DefaultModelLive = (settings: ModelSettings) => Layer.effect(DefaultModel, makeModel(settings))
