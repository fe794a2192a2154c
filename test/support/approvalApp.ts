import { Effect, Schema } from "effect"
import { defineAgent } from "../../src/agents/Agent.js"
import { defineApp } from "../../src/App.js"
import { defineTool } from "../../src/tools/Tool.js"

/**
 * Issue #32 item 1: an agent with a tool that waits for a human. `refund` needs approval above 10
 * (a function of the input); the fake provider calls it on "refund <amount>". `refunds` counts the
 * runs per amount, for tests in the server's process.
 */
export const refunds: Array<number> = []

export const refund = defineTool({
  name: "refund",
  description: "Refund an amount to the customer",
  parameters: Schema.Struct({ amount: Schema.Number }),
  execute: ({ amount }) => Effect.sync(() => (refunds.push(amount), { refunded: amount })),
  needsApproval: ({ amount }) => amount > 10
})

export const cashier = defineAgent({
  id: "cashier",
  name: "Cashier",
  purpose: "Refunds customers, with a human's approval above 10",
  instructions: "You refund customers.",
  tools: [refund],
  memory: true
})

export const approvalApp = defineApp({ agents: [cashier] })
