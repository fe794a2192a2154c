import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../Api.js"
import { ServerConfig } from "../config/ServerConfig.js"
import { Readiness } from "./Readiness.js"

export const HealthHandlers = HttpApiBuilder.group(ServiceApi, "health", (handlers) =>
  Effect.gen(function*() {
    const readiness = yield* Readiness
    const { instanceId } = yield* ServerConfig
    const up = Effect.succeed({ status: "up" as const, instanceId })
    return handlers
      .handle("health", () => up)
      .handle("ready", () => readiness.check)
  }))
