import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { ServiceApi } from "../Api.js"
import { CurrentCaller } from "../auth/Authentication.js"
import { Webhooks } from "./Webhooks.js"

export const WebhooksHandlers = HttpApiBuilder.group(ServiceApi, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers
      .handle("rotateWebhookSecret", () => Effect.flatMap(CurrentCaller, webhooks.rotateSecret))
      .handle("getWebhookSecret", () => Effect.flatMap(CurrentCaller, webhooks.secretInfo))
      .handle("listWebhookDeliveries", ({ path }) =>
        Effect.flatMap(CurrentCaller, (caller) =>
          Effect.map(
            webhooks.deliveries(path.id, path.executionId, caller.visibility),
            (deliveries) => ({ deliveries })
          )))
  }))
