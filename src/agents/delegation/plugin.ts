/** Delegation plugged into the generation core (generation/plugins.ts): delegate_task and its approval check. */
import type { Runtime } from "effect"
import type { DelegationPlugin } from "../generation/plugins.js"
import { DELEGATE_TASK, delegateTool, delegationApproval, type RunSubAgent } from "./delegateTask.js"

export const delegationPlugin = (run: RunSubAgent, runtime: Runtime.Runtime<never>): DelegationPlugin => ({
  toolName: DELEGATE_TASK,
  tool: (agent, call, delegations) => delegateTool(agent, call, run, delegations),
  approval: (agent, call, delegations, parent, signal) =>
    delegationApproval(agent, call, run, delegations, runtime, parent, signal)
})
