import { Context, Effect, Layer, Schema } from "effect"
import { defineApp, defineTool, resolveServerConfig, ServiceLive } from "../../src/index.js"

// A tool uses a service of the app's own; the layer launched without TicketsLive does not compile.
class Tickets extends Context.Tag("app/Tickets")<Tickets, { readonly count: Effect.Effect<number> }>() {}

const countTickets = defineTool({
  name: "count_tickets",
  description: "How many tickets are open",
  parameters: Schema.Struct({}),
  execute: () => Effect.flatMap(Tickets, (tickets) => tickets.count)
})

export const main = Effect.runFork(
  Layer.launch(ServiceLive(defineApp({ tools: [countTickets] }), resolveServerConfig({}, {})))
)
