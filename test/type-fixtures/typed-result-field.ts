import { Effect, Schema } from "effect"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { WorkflowEngine } from "../../src/workflows/engine/WorkflowEngine.js"

// A misspelled field of the result executeWorkflow answers (typed by the workflow's result schema).
const greet = workflow({
  id: "greet",
  name: "Greet",
  purpose: "p",
  input: Schema.Struct({ name: Schema.String }),
  result: Schema.Struct({ greeting: Schema.String })
})
  .andThen({ id: "hello", execute: ({ data }) => ({ greeting: `Hello, ${data.name}` }) })

export const program = Effect.gen(function*() {
  const engine = yield* WorkflowEngine
  const outcome = yield* engine.executeWorkflow(greet, { name: "Ada" })
  return outcome.status === "completed" ? outcome.result.greting : outcome.status
})
