import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../auth/Authentication.js"
import { RouteClassAnnotation } from "../auth/RouteClass.js"
import { Success } from "../http/Envelope.js"
import { NotFound } from "../http/Errors.js"
import { WebhookDeliveries, WebhookSecretCreated, WebhookSecretInfo } from "./WebhookSchemas.js"

/** No fields (an empty body will do): declared so that a body that is not JSON is refused. */
const RotateBody = Schema.Struct({}).annotations({ identifier: "RotateWebhookSecret", examples: [{}] })
const ExecutionPath = Schema.Struct({ id: Schema.String, executionId: Schema.String })

/** Completion callbacks (issue #33): the caller's signing secret, and an execution's deliveries; owner-scoped. */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret", "/webhooks/secret").setPayload(RotateBody)
      .addSuccess(Success(WebhookSecretCreated, { status: 201 }))
      .annotate(
        OpenApi.Summary,
        "Make (or rotate) the caller's signing secret; shown once; the previous one signs too for webhooks.secretGraceHours"
      )
  )
  .add(
    HttpApiEndpoint.get("getWebhookSecret", "/webhooks/secret")
      .addSuccess(Success(WebhookSecretInfo)).addError(NotFound)
      .annotate(OpenApi.Summary, "When the caller's signing secret was made and rotated (never the secret)")
  )
  .add(
    HttpApiEndpoint.get("listWebhookDeliveries", "/workflows/:id/executions/:executionId/webhooks").setPath(
      ExecutionPath
    )
      .addSuccess(Success(WebhookDeliveries)).addError(NotFound)
      .annotate(OpenApi.Summary, "The execution's callback deliveries (never events): status, attempts, last answer")
  )
  .annotate(OpenApi.Title, "Webhooks")
  .annotate(RouteClassAnnotation, "execution")
  .middleware(Authentication)
{}
