import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../Api.js"
import { ObservabilitySetup } from "./ObservabilitySetup.js"
import { Updates } from "./Updates.js"

export const OpsHandlers = HttpApiBuilder.group(ServiceApi, "ops", (handlers) =>
  Effect.gen(function*() {
    const updates = yield* Updates
    const setup = yield* ObservabilitySetup
    return handlers
      .handle("getUpdates", () => updates.check)
      .handle("installUpdates", ({ payload }) => updates.install(payload.packageName))
      .handle("setupObservability", ({ payload }) => setup.writeKeys(payload))
  }))
