/**
 * The generation core with its features plugged in (generation/plugins.ts): tool approval, delegation
 * and guardrails, composed once per registry. The registry loads it with its first call: the AI SDK is
 * a large share of start-up time that a process serving no agent call never needs.
 */
import type { AgentDefinition } from "./Agent.js"
import { approvalsPlugin, type ApprovalsSettings } from "./approvals/plugin.js"
import type { RunSubAgent } from "./delegation/delegateTask.js"
import { delegationPlugin } from "./delegation/plugin.js"
import type { GenerationEnv } from "./generation/call.js"
import type { CallRequest } from "./generation/contract.js"
import * as Generation from "./generation/Generation.js"
import { guardrailsPlugin } from "./guardrails/plugin.js"

/** What the registry holds for generation: its stores and settings, and tool approval's. */
export interface Parts extends Omit<GenerationEnv, "approvals" | "guardrails" | "delegation"> {
  readonly approvals: Omit<ApprovalsSettings, "runtime" | "runSubAgent">
}

export const plugged = (parts: Parts) => {
  const runSubAgent: RunSubAgent = (sub, request) => Generation.text(env, sub, request)
  const env: GenerationEnv = {
    ...parts,
    approvals: approvalsPlugin({ ...parts.approvals, runtime: parts.runtime, runSubAgent }),
    guardrails: guardrailsPlugin(parts.runtime),
    delegation: delegationPlugin(runSubAgent, parts.runtime)
  }
  return {
    text: (agent: AgentDefinition, request: CallRequest) => Generation.text(env, agent, request),
    object: (agent: AgentDefinition, request: CallRequest & { readonly schema: unknown }) =>
      Generation.object(env, agent, request),
    stream: (agent: AgentDefinition, request: CallRequest) => Generation.stream(env, agent, request),
    chat: (agent: AgentDefinition, request: CallRequest) => Generation.chat(env, agent, request),
    streamObject: (agent: AgentDefinition, request: CallRequest & { readonly schema: unknown }) =>
      Generation.streamObject(env, agent, request)
  }
}
