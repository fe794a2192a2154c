/** A call prepared from its request: the agent's parts resolved, the messages and tools it runs with. */
import type { LanguageModelV4 } from "@ai-sdk/provider"
import { InvalidPromptError } from "@ai-sdk/provider"
import { isStepCount, type ModelMessage, type ToolApprovalConfiguration, type ToolSet } from "ai"
import type { Option, Runtime, Tracer } from "effect"
import { Effect } from "effect"
import { ExecutionFailed, messageOf, ValidationError } from "../../core/errors.js"
import type { Tool } from "../../tools/Tool.js"
import { type AgentCallContext, type AgentDefinition, type AgentModel, resolveDynamic } from "../Agent.js"
import type { AgentInput, GenerationOptions } from "../AgentsSchemas.js"
import type { ApprovalStore } from "../approvals/ApprovalStore.js"
import type { NewApprovals } from "../approvals/ApprovalStore.js"
import { callerApprovalParts, type Resumed } from "../approvals/continuation.js"
import { delegatedRefusal, toolApprovalFor } from "../approvals/gate.js"
import type { Owner } from "../callContext.js"
import {
  DELEGATE_TASK,
  delegateTool,
  delegationApproval,
  type Delegations,
  type RunSubAgent
} from "../delegation/delegateTask.js"
import { guardedRecord, guardedUserMessage, guardInput, rewrittenInput } from "../guardrails/input.js"
import type { MemoryStore } from "../memory/MemoryStore.js"
import { toAiTools } from "./aiTools.js"
import {
  checkClaimedToolResults,
  refusedProviderOptions,
  withoutCallerSystemMessages,
  withoutProviderOptions
} from "./callerInput.js"
import { toolHooksOf } from "./hooks.js"
import { type ClientConversation, recordedInput, toModelMessages, userMessageToRemember } from "./messages.js"
import { isModelList, modelFor, resolveModels, usesFallback } from "./modelChoice.js"
import { type CallSettings, resolveSettings } from "./settings.js"
import { tracedModel } from "./tracedModel.js"

export interface CallRequest {
  /** Absent only when answering pending approvals (`options.approvals`). */
  readonly input?: AgentInput | undefined
  readonly options?: GenerationOptions | undefined
  readonly user?: unknown
  /** Under authentication: whose conversation and history entry this call is (then `options.userId` is theirs). */
  readonly owner?: Owner | undefined
  /** The client holds the conversation (the AI SDK's chat request); see ClientConversation. */
  readonly clientConversation?: ClientConversation | undefined
  /**
   * Never from a request: `options.approvals` are denials of approvals that expired while a workflow
   * waited on them (its due work answers them so); rows past their expiry may then be answered.
   */
  readonly approvalsExpired?: boolean | undefined
  /**
   * Never from a request: the workflow execution this call is a step of. Its approvals are stored bound
   * to it, and answered only by its resume (options.approvals from anyone else: 404).
   */
  readonly boundTo?: string | undefined
  /** A task another agent delegated (delegate_task) that cannot stop for approval: such tools refuse. */
  readonly delegated?: boolean | undefined
  /**
   * Never from a request: a sub-agent's call whose approval requests become its parent's
   * (delegation/delegateTask.ts): they are handed over here instead of stored.
   */
  readonly collectApprovals?: ((approvals: NewApprovals) => void) | undefined
  /** Never from a request: a sub-agent's call its parent's continuation continues (answers already taken). */
  readonly continued?: Resumed | undefined
}

/** What generation needs from the registry around it. */
export interface GenerationEnv {
  readonly defaultModel: AgentModel
  readonly memory: MemoryStore["Type"]
  /** The conversation memory one call loads at most, in bytes (AGENT_CONTEXT_MAX_BYTES). */
  readonly contextMaxBytes: number
  readonly runtime: Runtime.Runtime<never>
  /** Whether model spans keep prompts and completions (ServerConfig.recordContent). */
  readonly recordContent?: boolean
  /** How a sub-agent is called (delegate_task, for an agent with sub-agents). */
  readonly runSubAgent?: RunSubAgent | undefined
  /** The caller's provider options that may reach the provider, as `provider.key` (none when absent). */
  readonly providerOptionsAllow?: ReadonlySet<string>
  /** An agent with working memory: its record's block for the instructions and its update tool (none for this call: undefined). */
  readonly workingMemory?: (agent: AgentDefinition, call: AgentCallContext, withTools: boolean) => Effect.Effect<
    { readonly instructions: string; readonly tool: Tool } | undefined
  >
  /** Tool approval (issue #32): where requests are kept, how long they wait, the SDK's signing secret. */
  readonly approvals?: {
    readonly store: ApprovalStore["Type"]
    readonly ttlMs: number
    readonly secret?: string | undefined
  }
}

export interface PreparedCall {
  /** The history entry's id, also the id of the assembled chat message. */
  readonly callId: string
  readonly model: LanguageModelV4
  readonly instructions: string
  readonly messages: Array<ModelMessage>
  readonly newMessages: Array<ModelMessage>
  readonly tools: ToolSet
  readonly settings: CallSettings
  readonly maxSteps: number
  readonly call: AgentCallContext
  readonly remember: boolean
  /** The history entry's input when input guardrails rewrote it (else the request's, as sent). */
  readonly recordedInput?: unknown
  /** The agent call's span: parent of what runs later from the SDK's own promises. */
  readonly parent: Option.Option<Tracer.AnySpan>
  /** The SDK's `toolApproval`, when a tool may need approval. */
  readonly toolApproval?: ToolApprovalConfiguration<ToolSet, any> | undefined
  readonly approvalSecret?: string | undefined
  /** A call continued after its approvals were answered. */
  readonly resumed?: Resumed | undefined
  /** Its delegate_task calls' outcomes (an agent with sub-agents). */
  readonly delegations?: Delegations | undefined
  /** Aborts the sub-agents its approval check runs (they run outside the SDK's own abort). */
  readonly stopDelegations?: AbortController | undefined
}

const NO_TOOLS: ReadonlyArray<Tool> = []

export const failed = (agent: AgentDefinition, field = "input") => (error: unknown) =>
  InvalidPromptError.isInstance(error)
    ? new ValidationError({ message: `Input validation failed: ${field}: ${error.message}` })
    : new ExecutionFailed({ message: `Agent ${agent.id} failed: ${messageOf(error)}` })

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
      : yield* Effect.all([
        resolveDynamic(agentInstructions, call),
        agentModel === undefined ? Effect.succeed(env.defaultModel) : resolveModels(agentModel, call),
        resumed !== undefined
          ? Effect.succeed([])
          : Effect.tryPromise({ try: () => toModelMessages(input!), catch: (error) => error })
      ]).pipe(Effect.mapError(failed(agent, field)))
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
      ? yield* guardInput(agent, call, sent, field)
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
    const run = agent.subAgents?.length && withTools ? env.runSubAgent : undefined
    const delegations: Delegations | undefined = run === undefined ? undefined : resumed?.delegations ?? new Map()
    const tools = withTools
      ? [
        ...(agent.tools ?? []),
        ...(run === undefined ? NO_TOOLS : [delegateTool(agent, call, run, delegations!)]),
        ...(working === undefined ? NO_TOOLS : [working.tool])
      ].filter((t) => active === undefined || active.includes(t.name))
      : []
    const callId = resumed?.callId ?? crypto.randomUUID()
    const caller = { context: call.context, user: call.user }
    // Sub-agents' approvals become this call's where a human can be asked (not over /chat, whose
    // client shows the tool calls it holds: see docs/decisions.md).
    const bubbles = run !== undefined && env.approvals !== undefined && request.delegated !== true &&
      request.clientConversation === undefined && tools.some((t) => t.name === DELEGATE_TASK)
    const stopDelegations = bubbles ? new AbortController() : undefined
    const toolApproval = tools.length === 0 || request.delegated === true ? undefined : toolApprovalFor(
      tools,
      caller,
      env.runtime,
      stopDelegations === undefined
        ? undefined
        : {
          [DELEGATE_TASK]: delegationApproval(
            agent,
            call,
            run!,
            delegations!,
            env.runtime,
            parent,
            stopDelegations.signal
          )
        }
    )
    const fallback = usesFallback(agent, model)
    return {
      callId,
      model: fallback || isModelList(model)
        ? modelFor(env, agent, model, parent)
        : tracedModel(model, agent.id, parent, env.runtime, env.recordContent),
      instructions: working === undefined ? instructions : instructions + working.instructions,
      messages: resumed !== undefined ? resumed.messages : [...past, ...newMessages],
      newMessages: client === undefined
        ? newMessages
        : guarded === undefined
        ? userMessageToRemember(client)
        : guardedUserMessage(guarded.messages, client.storesUserMessage),
      recordedInput: guarded === undefined
        ? undefined
        : guarded.partsRewritten
        ? guardedRecord(guarded, client !== undefined)
        : guarded.rewrites === undefined
        ? undefined
        : rewrittenInput(recordedInput(request), guarded.rewrites),
      tools: toAiTools(
        tools,
        caller,
        env.runtime,
        parent,
        toolHooksOf(agent, callId, call),
        resumed?.approved,
        request.delegated === true ? delegatedRefusal : undefined
      ),
      // The wrapper retries and falls over itself: the SDK's own retries would multiply its tries.
      settings: fallback ? { ...settings, maxRetries: 0 } : settings,
      maxSteps,
      call,
      remember,
      parent,
      ...(toolApproval === undefined ? {} : { toolApproval, approvalSecret: env.approvals?.secret }),
      ...(resumed === undefined ? {} : { resumed }),
      ...(delegations === undefined ? {} : { delegations }),
      ...(stopDelegations === undefined ? {} : { stopDelegations })
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
  ...prepared.settings,
  ...(prepared.toolApproval === undefined ? {} : { toolApproval: prepared.toolApproval, ...approvalSecret(prepared) })
})

const approvalSecret = (prepared: PreparedCall) =>
  prepared.approvalSecret === undefined ? {} : { experimental_toolApprovalSecret: prepared.approvalSecret }
