/** A call prepared from its request: the agent's parts resolved, the messages and tools it runs with. */
import { InvalidPromptError } from "@ai-sdk/provider"
import { isStepCount, type ModelMessage } from "ai"
import { Effect, type Runtime } from "effect"
import { ExecutionFailed, messageOf, ValidationError } from "../../core/errors.js"
import type { Tool } from "../../tools/Tool.js"
import { type AgentDefinition, type AgentModel, resolveDynamic } from "../Agent.js"
import type { AgentCallContext } from "../callContext.js"
import type { MemoryStore } from "../memory/MemoryStore.js"
import { toAiTools } from "./aiTools.js"
import {
  callerApprovalParts,
  checkClaimedToolResults,
  refusedProviderOptions,
  withoutCallerSystemMessages,
  withoutProviderOptions
} from "./callerInput.js"
import { commitsOf } from "./commits.js"
import type { CallRequest, Delegations, PreparedCall, Resumed } from "./contract.js"
import { toolHooksOf } from "./hooks.js"
import { toModelMessages, userMessageToRemember } from "./messages.js"
import { isModelList, modelFor, resolveModels, usesFallback } from "./modelChoice.js"
import type { ApprovalsPlugin, CommitPlugin, DelegationPlugin, GuardrailsPlugin } from "./plugins.js"
import { resolveSettings } from "./settings.js"
import { tracedModel } from "./tracedModel.js"

export type { CallRequest, PreparedCall } from "./contract.js"

/** What generation needs from the registry around it: its stores and settings, and the features plugged in (plugins.ts). */
export interface GenerationEnv {
  readonly defaultModel: AgentModel
  readonly memory: MemoryStore["Type"]
  /** The conversation memory one call loads at most, in bytes (AGENT_CONTEXT_MAX_BYTES). */
  readonly contextMaxBytes: number
  readonly runtime: Runtime.Runtime<never>
  /** Whether model spans keep prompts and completions (ServerConfig.recordContent). */
  readonly recordContent?: boolean
  /** The caller's provider options that may reach the provider, as `provider.key` (none when absent). */
  readonly providerOptionsAllow?: ReadonlySet<string>
  /** An agent with working memory: its record's block for the instructions and its update tool (none for this call: undefined). */
  readonly workingMemory?: (agent: AgentDefinition, call: AgentCallContext, withTools: boolean) => Effect.Effect<
    { readonly instructions: string; readonly tool: Tool } | undefined
  >
  /** Tool approval (issue #32). */
  readonly approvals: ApprovalsPlugin
  /** Input and output guardrails. */
  readonly guardrails: GuardrailsPlugin
  /** delegate_task, for an agent with sub-agents (none: their sub-agents are not offered). */
  readonly delegation?: DelegationPlugin | undefined
  /** Where each step's end and tool result are committed as they happen (none by default). */
  readonly commits?: CommitPlugin | undefined
}

const NO_TOOLS: ReadonlyArray<Tool> = []

export const failed = (agent: AgentDefinition, field = "input") => (error: unknown) =>
  InvalidPromptError.isInstance(error)
    ? new ValidationError({ message: `Input validation failed: ${field}: ${error.message}` })
    : new ExecutionFailed({ message: `Agent ${agent.id} failed: ${messageOf(error)}` })

/** The agent's dynamic instructions and model and the caller's messages (none: continued), as the call's failure when one fails. */
const resolveParts = (
  env: GenerationEnv,
  agent: AgentDefinition,
  call: AgentCallContext,
  input: CallRequest["input"],
  field: string
) => {
  const fail = failed(agent, field)
  return Effect.all([
    Effect.mapError(resolveDynamic(agent.instructions, call), fail),
    agent.model === undefined
      ? Effect.succeed(env.defaultModel)
      : Effect.mapError(resolveModels(agent.model, call), fail),
    input === undefined
      ? Effect.succeed<Array<ModelMessage>>([])
      : Effect.tryPromise({ try: () => toModelMessages(input), catch: fail })
  ])
}

export const prepare = (
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest,
  withTools: boolean,
  resumed?: Resumed
) =>
  Effect.gen(function*() {
    const options = request.options ?? {}
    if (resumed === undefined && options.approvals !== undefined) {
      return yield* ValidationError.fromIssues([{
        path: ["options", "approvals"],
        message: "answers pending approvals on POST /agents/:id/text or /stream, without input"
      }])
    }
    const input = request.input
    if (input === undefined && resumed === undefined) {
      return yield* ValidationError.fromIssues([{ path: ["input"], message: "is missing" }])
    }
    const call: AgentCallContext = {
      context: options.context ?? {},
      user: request.user ?? null,
      userId: options.userId,
      conversationId: options.conversationId,
      ...(request.owner === undefined ? {} : { owner: request.owner })
    }
    const field = request.clientConversation === undefined ? "input" : "messages"
    const allow = env.providerOptionsAllow ?? new Set<string>()
    const refused = refusedProviderOptions(options, allow)
    if (refused !== undefined) {
      return yield* refused
    }
    const { contextLimit, maxSteps, settings } = resolveSettings(options, agent.defaults)
    const { instructions: agentInstructions, model: agentModel } = agent
    // The common case (fixed instructions and model, a text input) needs no promise, so no async hop.
    const [instructions, model, given] = typeof agentInstructions === "string" && typeof agentModel !== "function" &&
        !isModelList(agentModel) && (typeof input === "string" || resumed !== undefined)
      ? [agentInstructions, agentModel ?? env.defaultModel, [
        { role: "user", content: typeof input === "string" ? input : "" } satisfies ModelMessage
      ]]
      : yield* resolveParts(env, agent, call, resumed === undefined ? input : undefined, field)
    const sent = resumed !== undefined
      ? resumed.newMessages
      : typeof input === "string"
      ? given
      : withoutProviderOptions(yield* withoutCallerSystemMessages(given, field), allow)
    if (
      resumed === undefined && typeof input !== "string" && request.clientConversation === undefined &&
      callerApprovalParts(sent)
    ) {
      return yield* ValidationError.fromIssues([{
        path: [field],
        message: "must not carry tool approvals: answer them with options.approvals"
      }])
    }
    // A chat's answers are its `approval-responded` parts (approvals/chat.ts); anything else the SDK would run is refused.
    if (
      resumed === undefined && request.clientConversation !== undefined && sent.length > 0 &&
      callerApprovalParts(sent.slice(-1))
    ) {
      return yield* ValidationError.fromIssues([{
        path: [field],
        message: "must not carry tool approvals this service did not ask for"
      }])
    }
    // A continued call's messages passed the input guardrails when it was asked.
    const guarded = resumed === undefined && agent.inputGuardrails?.length
      ? yield* env.guardrails.input(agent, call, sent, field, request)
      : undefined
    const newMessages = guarded?.messages ?? sent
    // What the caller sent back must be what the service produced, before a guardrail rewrote it.
    if (resumed === undefined && typeof input !== "string") {
      yield* checkClaimedToolResults(env.memory, agent.id, call.conversationId, request.owner, sent, field)
    }
    const parent = yield* Effect.option(Effect.currentSpan)
    const remember = agent.memory === true && call.conversationId !== undefined
    const client = request.clientConversation
    const past = remember && contextLimit > 0 && client === undefined && resumed === undefined
      ? yield* env.memory.load(
        agent.id,
        call.conversationId!,
        { limit: contextLimit, maxBytes: env.contextMaxBytes },
        request.owner
      )
      : []
    const working = agent.workingMemory === undefined || env.workingMemory === undefined
      ? undefined
      : yield* env.workingMemory(agent, call, withTools)
    const active = agent.activeTools?.(call)
    const delegation = agent.subAgents?.length && withTools ? env.delegation : undefined
    const delegations: Delegations | undefined = delegation === undefined
      ? undefined
      : resumed?.delegations ?? new Map()
    const tools = withTools
      ? [
        ...(agent.tools ?? []),
        ...(delegation === undefined ? NO_TOOLS : [delegation.tool(agent, call, delegations!)]),
        ...(working === undefined ? NO_TOOLS : [working.tool])
      ].filter((t) => active === undefined || active.includes(t.name))
      : []
    const callId = resumed?.callId ?? crypto.randomUUID()
    const caller = { context: call.context, user: call.user }
    // Sub-agents' approvals become this call's where a human can be asked (not over /chat, whose
    // client shows the tool calls it holds: see docs/decisions.md).
    const bubbles = delegation !== undefined && request.delegated !== true &&
      request.clientConversation === undefined && tools.some((t) => t.name === delegation.toolName)
    const stopDelegations = bubbles ? new AbortController() : undefined
    const toolApproval = tools.length === 0 || request.delegated === true ? undefined : env.approvals.toolApproval(
      tools,
      caller,
      stopDelegations === undefined || delegation === undefined
        ? undefined
        : { [delegation.toolName]: delegation.approval(agent, call, delegations!, parent, stopDelegations.signal) }
    )
    const commits = env.commits === undefined
      ? undefined
      : commitsOf(env.commits, { agentId: agent.id, callId, call }, env.runtime, parent)
    const fallback = usesFallback(agent, model)
    return {
      callId,
      model: fallback || isModelList(model)
        ? modelFor(env, agent, model, parent)
        : tracedModel(model, agent.id, parent, env.runtime, env.recordContent),
      instructions: working === undefined ? instructions : instructions + working.instructions,
      messages: resumed !== undefined ? resumed.messages : [...past, ...newMessages],
      newMessages: client === undefined ? newMessages : guarded?.remembered ?? userMessageToRemember(client),
      recordedInput: guarded?.recordedInput,
      tools: toAiTools(
        tools,
        caller,
        env.runtime,
        parent,
        toolHooksOf(agent, callId, call),
        tools.some((t) => t.needsApproval !== undefined)
          ? env.approvals.gate(resumed?.approved, caller, request.delegated === true)
          : undefined,
        commits?.toolResult
      ),
      // The wrapper retries and falls over itself: the SDK's own retries would multiply its tries.
      settings: fallback ? { ...settings, maxRetries: 0 } : settings,
      maxSteps,
      call,
      remember,
      parent,
      ...(toolApproval === undefined ? {} : { toolApproval, approvalSecret: env.approvals.secret }),
      ...(resumed === undefined ? {} : { resumed }),
      ...(delegations === undefined ? {} : { delegations }),
      ...(stopDelegations === undefined ? {} : { stopDelegations }),
      onStepEnd: commits?.stepEnd
    } satisfies PreparedCall
  })

/** The SDK call's arguments; its abort also aborts the sub-agents run by the approval check. */
export const callArguments = (prepared: PreparedCall, abortSignal: AbortSignal) => {
  const stop = prepared.stopDelegations
  if (stop !== undefined) abortSignal.addEventListener("abort", () => stop.abort(), { once: true })
  return { ...modelArguments(prepared), abortSignal }
}

const modelArguments = (prepared: PreparedCall) => ({
  model: prepared.model,
  instructions: prepared.instructions,
  messages: prepared.messages,
  tools: prepared.tools,
  stopWhen: isStepCount(prepared.maxSteps),
  onStepEnd: prepared.onStepEnd,
  ...prepared.settings,
  ...(prepared.toolApproval === undefined ? {} : { toolApproval: prepared.toolApproval, ...approvalSecret(prepared) })
})

const approvalSecret = (prepared: PreparedCall) =>
  prepared.approvalSecret === undefined ? {} : { experimental_toolApprovalSecret: prepared.approvalSecret }
