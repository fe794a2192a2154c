import { Effect, Schema } from "effect"
import { workflow } from "../../src/workflows/definition/Workflow.js"
import { WorkflowEngine } from "../../src/workflows/engine/WorkflowEngine.js"

// Issue #30 item 6: the valid counterparts of test/type-fixtures/typed-{execute-input,result-field,
// resume-field}.ts, type-checked by `npm run typecheck` (each fixture differs from these by its one mistake).

const greet = workflow({
  id: "greet",
  name: "Greet",
  purpose: "p",
  input: Schema.Struct({ name: Schema.String }),
  result: Schema.Struct({ greeting: Schema.String })
})
  .andThen({ id: "hello", execute: ({ data }) => ({ greeting: `Hello, ${data.name}` }) })

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

export const executeInput = Effect.flatMap(WorkflowEngine, (engine) => engine.executeWorkflow(greet, { name: "Ada" }))

export const resultField = Effect.gen(function*() {
  const engine = yield* WorkflowEngine
  const outcome = yield* engine.executeWorkflow(greet, { name: "Ada" })
  return outcome.status === "completed" ? outcome.result.greeting : outcome.status
})

export const resumeField = Effect.flatMap(
  WorkflowEngine,
  (engine) =>
    engine.resumeWorkflow({ workflow: approval, executionId: "e1", stepId: "approve", data: { approved: true } })
)
