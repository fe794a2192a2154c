import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// A misspelled field of the previous step's output.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andThen({ id: "a", execute: ({ data }) => ({ greeting: `Hi ${data.name}` }) })
      .andThen({ id: "b", execute: ({ data }) => data.greting.length })
  ]
})
export const unused = Effect.void
