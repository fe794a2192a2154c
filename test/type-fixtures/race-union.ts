import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// After andRace the data is the union of its steps' outputs: a field one of them lacks may be missing.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andRace({
        id: "race",
        steps: [{ id: "fast", execute: () => ({ winner: "fast", ms: 1 }) }, {
          id: "slow",
          execute: () => Effect.succeed({ winner: "slow" })
        }]
      })
      .andThen({ id: "after", execute: ({ data }) => data.ms })
  ]
})
export const unused = Effect.void
