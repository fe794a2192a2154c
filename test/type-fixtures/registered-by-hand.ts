import { Context, Effect, Layer, Schema } from "effect"
import { RegisteredWorkflows, workflow } from "../../src/index.js"

// The registries hold definitions bound to their context: one that still needs Tickets cannot be
// handed to them by hand (the way past ServicesLive's check).
class Tickets extends Context.Tag("app/Tickets")<Tickets, { readonly close: (id: string) => Effect.Effect<void> }>() {}

const closeTicket = workflow({
  id: "close-ticket",
  name: "Close a ticket",
  purpose: "Closes it",
  input: Schema.Struct({ ticketId: Schema.String }),
  result: Schema.Struct({ ticketId: Schema.String })
}).andTap({ id: "close", execute: ({ data }) => Effect.flatMap(Tickets, (tickets) => tickets.close(data.ticketId)) })

export const registered = Layer.succeed(RegisteredWorkflows, [closeTicket])
