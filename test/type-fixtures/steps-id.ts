import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// A step id that is not an earlier step's.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andThen({ id: "load-ticket", execute: ({ data }) => ({ ticketId: data.name }) })
      .andThen({ id: "b", execute: ({ steps }) => steps["load-tiket"] })
  ]
})
export const unused = Effect.void
