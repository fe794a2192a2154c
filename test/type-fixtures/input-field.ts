import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// A misspelled field of the workflow's input, read in a later step.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andThen({ id: "a", execute: () => 1 })
      .andThen({ id: "b", execute: ({ input }) => input.nmae })
  ]
})
export const unused = Effect.void
