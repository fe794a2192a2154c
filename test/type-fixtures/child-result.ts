import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

const child = workflow({
  id: "child",
  name: "C",
  purpose: "p",
  input: Schema.Struct({ name: Schema.String }),
  result: Schema.Struct({ ok: Schema.Boolean })
})
  .andThen({ id: "c", execute: ({ data }) => ({ ok: data.name.length > 0 }) })
// After a child, the data is the child's result, not the parent's data.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    }).andWorkflow({ id: "sub", workflow: child }).andThen({ id: "after", execute: ({ data }) => data.name })
  ]
})
export const unused = Effect.void
