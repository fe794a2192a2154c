/** The tools an agent's summary lists: its own, then the ones the service adds (delegate_task, update_working_memory). */
import { JSONSchema } from "effect"
import type { AgentDefinition } from "./Agent.js"
import { DELEGATE_TASK, delegateParameters } from "./delegation/delegateTask.js"
import { UPDATE_WORKING_MEMORY } from "./workingMemory/config.js"

export const toolSummaries = (agent: AgentDefinition) => [
  ...(agent.tools ?? []).map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    needsApproval: tool.needsApproval !== undefined
  })),
  ...(agent.subAgents?.length
    ? [{
      name: DELEGATE_TASK,
      description: "Hand a task to sub-agents",
      parameters: delegateParameters,
      needsApproval: false
    }]
    : []),
  ...(agent.workingMemory === undefined ? [] : [{
    name: UPDATE_WORKING_MEMORY,
    description: `Replace the working memory (per ${agent.workingMemory.scope})`,
    parameters: JSONSchema.make(agent.workingMemory.schema) as unknown as Record<string, unknown>,
    needsApproval: false
  }])
]
