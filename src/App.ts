import type { AgentDefinition } from "./agents/Agent.js"
import type { Tool } from "./tools/Tool.js"

/** What a deployment serves: its agents and its tools (workflows join in a later issue). */
export interface ServiceApp {
  readonly agents: ReadonlyArray<AgentDefinition>
  /** Tools registered on their own, beside those the agents own. */
  readonly tools: ReadonlyArray<Tool>
}

export const defineApp = (app: Partial<ServiceApp>): ServiceApp => ({
  agents: app.agents ?? [],
  tools: app.tools ?? []
})
