import type { AgentDefinition } from "./agents/Agent.js"
import type { Tool } from "./tools/Tool.js"
import type { WorkflowDefinition } from "./workflows/Workflow.js"

/** What a deployment serves: its agents, tools and workflows. */
export interface ServiceApp {
  readonly agents: ReadonlyArray<AgentDefinition>
  /** Tools registered on their own, beside those the agents own. */
  readonly tools: ReadonlyArray<Tool>
  readonly workflows: ReadonlyArray<WorkflowDefinition>
}

export const defineApp = (app: Partial<ServiceApp>): ServiceApp => ({
  agents: app.agents ?? [],
  tools: app.tools ?? [],
  workflows: app.workflows ?? []
})
