import type { WorkflowEvent } from "../../src/workflows/api/WorkflowSchemas.js"
import type { Execution } from "../../src/workflows/execution/ExecutionStore.js"

/** An event of execution `id`, stamped now. */
export const testEvent = (id: string, type: WorkflowEvent["type"], from = "step"): WorkflowEvent => ({
  type,
  executionId: id,
  from,
  timestamp: new Date().toISOString(),
  status: "running"
})

/** A fresh running execution of workflow "w" at its first step, as a store test writes it. */
export const testExecution = (id: string, overrides: Partial<Execution> = {}): Execution => {
  const at = new Date().toISOString()
  return {
    id,
    workflowId: "w",
    workflowName: "W",
    status: "running",
    input: {},
    context: {},
    user: null,
    stepIndex: 0,
    stepData: {},
    currentData: {},
    metadata: { traceId: "", spanId: "" },
    version: 0,
    lastSeq: 0,
    createdAt: at,
    updatedAt: at,
    ...overrides
  }
}
