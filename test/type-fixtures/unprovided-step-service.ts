import { Context, Effect, Layer, Schema } from "effect"
import { defineApp, resolveServerConfig, ServicesLive, workflow } from "../../src/index.js"

// A workflow step uses a service of the app's own: the services' layer still requires it when built.
class Tickets extends Context.Tag("app/Tickets")<Tickets, { readonly close: (id: string) => Effect.Effect<void> }>() {}

const closeTicket = workflow({
  id: "close-ticket",
  name: "Close a ticket",
  purpose: "Closes it",
  input: Schema.Struct({ ticketId: Schema.String }),
  result: Schema.Struct({ ticketId: Schema.String })
}).andTap({ id: "close", execute: ({ data }) => Effect.flatMap(Tickets, (tickets) => tickets.close(data.ticketId)) })

const services = ServicesLive(defineApp({ workflows: [closeTicket] }), resolveServerConfig({}, {}))
export const main = Effect.runPromise(Effect.scoped(Layer.build(services)))
