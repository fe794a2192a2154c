import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

const child = workflow({
  id: "child",
  name: "C",
  purpose: "p",
  input: Schema.Struct({ ticketId: Schema.String }),
  result: Schema.Struct({ ok: Schema.Boolean })
})
  .andThen({ id: "c", execute: ({ data }) => ({ ok: data.ticketId.length > 0 }) })
// What `input` makes of the data does not fit the child's input.
export const app = defineApp({
  workflows: [
    workflow({
      id: "w",
      name: "W",
      purpose: "p",
      input: Schema.Struct({ name: Schema.String, n: Schema.Number }),
      result: Schema.Unknown
    }).andWorkflow({ id: "sub", workflow: child, input: ({ data }) => ({ ticket: data.name }) })
  ]
})
export const unused = Effect.void
