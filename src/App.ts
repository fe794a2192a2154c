import type { AgentDefinition } from "./agents/Agent.js"
import type { Tool } from "./tools/Tool.js"
import type { WorkflowDefinition } from "./workflows/definition/Workflow.js"

/**
 * What a deployment serves: its agents, tools and workflows. `R` is what their code requires: the
 * services of your own that `ServiceLive`/`ServicesLive` then require of you (`never` when nothing).
 */
export interface ServiceApp<out R = never> {
  readonly agents: ReadonlyArray<AgentDefinition<R>>
  /** Tools registered on their own, beside those the agents own. */
  readonly tools: ReadonlyArray<Tool<R>>
  readonly workflows: ReadonlyArray<WorkflowDefinition<any, any, R>>
}

/** The parts an app is made of, each with its own requirements. */
export interface AppParts {
  readonly agents?: ReadonlyArray<AgentDefinition<unknown>> | undefined
  readonly tools?: ReadonlyArray<Tool<unknown>> | undefined
  readonly workflows?: ReadonlyArray<WorkflowDefinition<any, any, unknown>> | undefined
}

/** The elements of the list under `K`, if the parts have one (not the constraint's type when absent). */
type Element<A, K extends string> = K extends keyof A ? A[K] extends ReadonlyArray<infer E> | undefined ? E : never
  : never

// Distributive (over a naked parameter), so that an absent list (`never`) requires nothing.
type AgentRequirements<E> = E extends AgentDefinition<infer R> ? R : never
type ToolRequirements<E> = E extends Tool<infer R> ? R : never
type WorkflowRequirements<E> = E extends WorkflowDefinition<any, any, infer R> ? R : never

/** What an app's parts require together. */
export type AppRequirements<A extends AppParts> =
  | AgentRequirements<Element<A, "agents">>
  | ToolRequirements<Element<A, "tools">>
  | WorkflowRequirements<Element<A, "workflows">>

/** An app of agents, tools and workflows; its type carries what their code requires. */
export const defineApp = <const A extends AppParts>(app: A): ServiceApp<AppRequirements<A>> => ({
  agents: (app.agents ?? []) as ReadonlyArray<AgentDefinition<AppRequirements<A>>>,
  tools: (app.tools ?? []) as ReadonlyArray<Tool<AppRequirements<A>>>,
  workflows: (app.workflows ?? []) as ReadonlyArray<WorkflowDefinition<any, any, AppRequirements<A>>>
})
