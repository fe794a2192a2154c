/**
 * The generation core with its features plugged in (generation/plugins.ts): tool approval, delegation
 * and guardrails, composed once per registry. The registry loads it with its first call: the AI SDK is
 * a large share of start-up time that a process serving no agent call never needs.
 */
import { Redacted, type Runtime } from "effect"
import type { ServerConfigShape } from "../config/ServerConfig.js"
import type { AgentDefinition, AgentModel } from "./Agent.js"
import type { ApprovalStore } from "./approvals/ApprovalStore.js"
import { approvalsPlugin } from "./approvals/plugin.js"
import type { RunSubAgent } from "./delegation/delegateTask.js"
import { delegationPlugin } from "./delegation/plugin.js"
import type { GenerationEnv } from "./generation/call.js"
import type { CallRequest } from "./generation/contract.js"
import * as Generation from "./generation/Generation.js"
import { guardrailsPlugin } from "./guardrails/plugin.js"
import type { MemoryStore } from "./memory/MemoryStore.js"
import { forCall } from "./workingMemory/workingMemory.js"
import type { WorkingMemoryStore } from "./workingMemory/WorkingMemoryStore.js"

/** What the registry holds for generation: its configuration, stores and default model. */
export interface Parts {
  readonly config: ServerConfigShape
  /** The conversation memory one call loads at most, in bytes. */
  readonly contextMaxBytes: number
  readonly defaultModel: AgentModel
  readonly memory: MemoryStore["Type"]
  readonly workingMemory: WorkingMemoryStore["Type"]
  readonly approvalStore: ApprovalStore["Type"]
  readonly runtime: Runtime.Runtime<never>
}

export const plugged = ({ approvalStore, config, runtime, ...parts }: Parts) => {
  const runSubAgent: RunSubAgent = (sub, request) => Generation.text(env, sub, request)
  const env: GenerationEnv = {
    defaultModel: parts.defaultModel,
    memory: parts.memory,
    contextMaxBytes: parts.contextMaxBytes,
    runtime,
    recordContent: config.recordContent,
    providerOptionsAllow: new Set(config.providerOptionsAllow),
    workingMemory: forCall(parts.workingMemory),
    approvals: approvalsPlugin({
      store: approvalStore,
      ttlMs: config.approvals?.ttlMs ?? 24 * 3600 * 1000,
      secret: config.approvals?.secret === undefined ? undefined : Redacted.value(config.approvals.secret),
      runtime,
      runSubAgent
    }),
    guardrails: guardrailsPlugin(runtime),
    delegation: delegationPlugin(runSubAgent, runtime)
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
