import { Effect, Schema } from "effect"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { WorkflowEngine } from "../../src/workflows/engine/WorkflowEngine.js"

// A misspelled field of the input given to executeWorkflow (typed by the workflow's input schema).
const greet = workflow({
  id: "greet",
  name: "Greet",
  purpose: "p",
  input: Schema.Struct({ name: Schema.String }),
  result: Schema.Struct({ greeting: Schema.String })
})
  .andThen({ id: "hello", execute: ({ data }) => ({ greeting: `Hello, ${data.name}` }) })

export const program = Effect.flatMap(WorkflowEngine, (engine) => engine.executeWorkflow(greet, { nmae: "Ada" }))
