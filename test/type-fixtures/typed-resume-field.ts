import { Effect, Schema } from "effect"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { WorkflowEngine } from "../../src/workflows/engine/WorkflowEngine.js"

// A misspelled field of the data resumeWorkflow gives the step (typed by that step's resumeSchema).
const approval = workflow({
  id: "approval",
  name: "Approval",
  purpose: "p",
  input: Schema.Struct({ amount: Schema.Number }),
  result: Schema.Boolean
})
  .andThen({
    id: "approve",
    resumeSchema: Schema.Struct({ approved: Schema.Boolean }),
    execute: ({ resumeData, suspend }) => (resumeData === undefined ? suspend("ask") : resumeData.approved)
  })

export const program = Effect.flatMap(
  WorkflowEngine,
  (engine) =>
    engine.resumeWorkflow({ workflow: approval, executionId: "e1", stepId: "approve", data: { aproved: true } })
)
