import { Context, Effect, Layer, Schema } from "effect"
import { defineAgent, defineApp, defineTool, resolveServerConfig, ServiceLive, workflow } from "../../src/index.js"

// An agent only a workflow's andAgent calls (not in the app's `agents`) uses a service of the app's own:
// the step carries the agent's requirement to the workflow, the app and the layer.
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

const ask = workflow({
  id: "ask",
  name: "Ask",
  purpose: "p",
  input: Schema.Struct({ q: Schema.String }),
  result: Schema.String
})
  .andAgent({ id: "answer", agent: support, prompt: ({ data }) => data.q })

export const main = Effect.runFork(
  Layer.launch(ServiceLive(defineApp({ workflows: [ask] }), resolveServerConfig({}, {})))
)
