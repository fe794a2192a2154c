import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// Suspend data that does not fit the step's suspendSchema.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    }).andThen({
      id: "approve",
      suspendSchema: Schema.Struct({ amount: Schema.Number }),
      execute: ({ data, suspend }) => suspend("ask", { amout: data.n })
    })
  ]
})
export const unused = Effect.void
