import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// An andAll inner step's output, by id, keeps its type.
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
          execute: ({ data }) => Effect.succeed(data.name.length)
        }]
      })
      .andThen({ id: "merge", execute: ({ steps }) => steps.length.toUpperCase() })
  ]
})
