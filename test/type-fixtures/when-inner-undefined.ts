import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// andWhen's inner step may not have run: its entry in steps may be undefined.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andWhen({
        id: "when",
        condition: ({ data }) => data.n > 10,
        step: { id: "double", execute: ({ data }) => ({ doubled: data.n * 2 }) }
      })
      .andThen({ id: "after", execute: ({ steps }) => steps.double.doubled })
  ]
})
export const unused = Effect.void
