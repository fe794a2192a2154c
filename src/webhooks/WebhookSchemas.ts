import { Schema } from "effect"

const secretFields = {
  createdAt: Schema.String,
  rotatedAt: Schema.String.annotations({ description: "When the current secret was made" }),
  previousValidUntil: Schema.NullOr(Schema.String).annotations({
    description: "Until when the secret it replaced still signs too (both signatures are sent)"
  })
}

export const WebhookSecretCreated = Schema.Struct({
  secret: Schema.String.annotations({
    description: "whsec_<base64>: shown this once; verify `webhook-signature` with it"
  }),
  ...secretFields
}).annotations({ identifier: "WebhookSecretCreated" })

export const WebhookSecretInfo = Schema.Struct(secretFields).annotations({ identifier: "WebhookSecretInfo" })

export const WebhookDeliveryView = Schema.Struct({
  id: Schema.String.annotations({ description: "The delivery's id, sent as `webhook-id` on each attempt" }),
  executionId: Schema.String,
  url: Schema.String.annotations({ description: "Userinfo and query redacted" }),
  event: Schema.String.annotations({
    description: "execution.completed, execution.failed, execution.cancelled or execution.suspended"
  }),
  status: Schema.Literal("pending", "delivered", "failed"),
  attempts: Schema.Number,
  nextAttemptAt: Schema.NullOr(Schema.String).annotations({ description: "While pending: when it is tried next" }),
  lastStatusCode: Schema.NullOr(Schema.Number),
  lastError: Schema.NullOr(Schema.String).annotations({
    description:
      "A class only: connect failed, tls failed, timeout, http <status>; refused: <reason>; gave up after <n> attempts: <class>"
  }),
  truncated: Schema.Boolean.annotations({ description: "The result passed webhooks.payloadMaxBytes and was sent cut" }),
  createdAt: Schema.String,
  updatedAt: Schema.String
}).annotations({ identifier: "WebhookDelivery" })
export type WebhookDeliveryView = typeof WebhookDeliveryView.Type

export const WebhookDeliveries = Schema.Struct({
  deliveries: Schema.Array(WebhookDeliveryView).annotations({ description: "Oldest first, at most 100" })
}).annotations({ identifier: "WebhookDeliveries" })
