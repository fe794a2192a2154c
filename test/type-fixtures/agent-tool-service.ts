import { Context, Effect, Layer, Schema } from "effect"
import { defineAgent, defineApp, defineTool, resolveServerConfig, ServiceLive } from "../../src/index.js"

// An agent's tool uses a service of the app's own: the agent, then the app, carry it to the layer.
class Billing
  extends Context.Tag("app/Billing")<Billing, { readonly refund: (amount: number) => Effect.Effect<string> }>()
{}

const refund = defineTool({
  name: "refund",
  description: "Refunds an amount",
  parameters: Schema.Struct({ amount: Schema.Number }),
  execute: ({ amount }) => Effect.flatMap(Billing, (billing) => billing.refund(amount))
})

const support = defineAgent({
  id: "support",
  name: "Support",
  purpose: "Helps",
  instructions: "Help.",
  tools: [refund]
})

export const main = Effect.runFork(
  Layer.launch(ServiceLive(defineApp({ agents: [support] }), resolveServerConfig({}, {})))
)
