import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

// andTap's output is not the next data: it goes on unchanged.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    })
      .andTap({ id: "audit", execute: () => ({ audited: true }) })
      .andThen({ id: "after", execute: ({ data }) => data.audited })
  ]
})
export const unused = Effect.void
