import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// andAll's data is the tuple of its steps' outputs: there is no third one, and the first is a string.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andAll({
        id: "measure",
        steps: [{ id: "upper", execute: ({ data }) => data.name.toUpperCase() }, {
          id: "length",
          execute: ({ data }) => data.name.length
        }]
      })
      .andThen({ id: "merge", execute: ({ data }) => data[2] })
  ]
})
export const unused = Effect.void
