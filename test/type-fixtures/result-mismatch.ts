import { Effect, Schema } from "effect"
import { defineApp } from "../../src/App.js"
import { workflow } from "../../src/workflows/definition/Workflow.js"

const greeting = workflow({
  id: "greeting",
  name: "Greeting",
  purpose: "p",
  input: Schema.Struct({ name: Schema.String }),
  result: Schema.Struct({ greeting: Schema.String })
}).andThen({ id: "compose", execute: ({ data }) => ({ greting: `Hello, ${data.name}!` }) })
// The last step's data does not fit result: registering it does not compile.
export const app = defineApp({ workflows: [greeting] })
export const unused = Effect.void
