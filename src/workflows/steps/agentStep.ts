import { isOutputSchema, prepareOutput } from "../../agents/AgentOutput.js"
import type { Step } from "../definition/WorkflowDefinition.js"

/**
 * An andAgent step as given, checked: an agent object, and an Effect Schema `output` that describes an
 * object. Without `map` the decoded answer is the step's output: that Schema is its `outputSchema`
 * (unless it has one), so the answer is stored in its encoded form (a Schema.Class is JSON there).
 */
export const checkAgentStep = <T extends Omit<Extract<Step, { type: "andAgent" }>, "type">>(step: T): T => {
  // Checked as given: a definition from JavaScript, or built around the types, may hold anything here.
  const agent: unknown = step.agent
  if (typeof agent !== "object" || agent === null || !("id" in agent) || typeof agent.id !== "string") {
    throw new Error(`andAgent ${step.id}: agent must be an agent definition (defineAgent), not ${typeof agent}`)
  }
  if (step.output === undefined || !isOutputSchema(step.output)) return step
  if (prepareOutput(step.output).jsonSchema.type !== "object") {
    throw new Error(`andAgent ${step.id}: output must be a Schema of an object (a model answers with a JSON object)`)
  }
  return step.map === undefined && step.outputSchema === undefined ? { ...step, outputSchema: step.output } : step
}
