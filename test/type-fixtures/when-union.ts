import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// After andWhen the data is D | B: a field only the inner step adds may be missing.
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
        step: { id: "double", execute: ({ data }) => ({ ...data, doubled: data.n * 2 }) }
      })
      .andThen({ id: "after", execute: ({ data }) => data.doubled })
  ]
})
export const unused = Effect.void
