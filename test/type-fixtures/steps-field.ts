import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// A misspelled field of an earlier step's output, by id.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andThen({ id: "load-ticket", execute: ({ data }) => ({ ticketId: data.name, total: data.n }) })
      .andThen({ id: "b", execute: () => 1 })
      .andThen({ id: "c", execute: ({ steps }) => steps["load-ticket"].totl })
  ]
})
export const unused = Effect.void
