import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// A suspend without the data the workflow's suspendSchema requires.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ n: Schema.Number }),
      result: Schema.Unknown,
      suspendSchema: Schema.Struct({ amount: Schema.Number })
    }).andThen({ id: "approve", execute: ({ suspend }) => suspend("ask") })
  ]
})
export const unused = Effect.void
