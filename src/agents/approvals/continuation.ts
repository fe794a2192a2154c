import type { ModelMessage, StepResult, ToolSet } from "ai"
import { Effect, Schema } from "effect"
import {
  type Conflict,
  ExecutionFailed,
  type GuardrailBlocked,
  type NotFound,
  ValidationError
} from "../../core/errors.js"
import type { AgentDefinition } from "../Agent.js"
import { GenerationOptions, type TextResult, ToolCallRecord, ToolResultRecord, Usage } from "../AgentsSchemas.js"
import { bubbled, StoredDelegation } from "../delegation/bubbled.js"
import { DELEGATE_TASK, type Delegations, type SubAnswer } from "../delegation/delegateTask.js"
import type { CallRequest, GenerationEnv } from "../generation/call.js"
import { recordedInput } from "../generation/messages.js"
import type { ToolOutcome } from "../generation/toolOutcomes.js"
import { guardReasons } from "../guardrails/input.js"
import {
  type AnsweredApproval,
  type ApprovalAnswer,
  inputHash,
  type NewApprovals,
  type PendingApproval
} from "./ApprovalStore.js"
import type { ApprovedCalls } from "./gate.js"
import { approvalAnswered } from "./telemetry.js"

/** What a call stopped for approval had done: added to what its continuation does. */
export interface Prior {
  readonly usage: Usage
  readonly toolCalls: TextResult["toolCalls"]
  readonly toolResults: TextResult["toolResults"]
  readonly outcomes: ReadonlyArray<ToolOutcome>
}

/** A call continued once its approvals were answered: its stored messages and the answers. */
export interface Resumed {
  readonly callId: string
  readonly startedAt: string
  readonly messages: Array<ModelMessage>
  readonly newMessages: Array<ModelMessage>
  readonly approved: ApprovedCalls
  readonly prior: Prior
  /** The answers it continues with. */
  readonly answers?: ReadonlyArray<AnsweredApproval> | undefined
  /** Its delegate_task calls whose sub-agents went on (delegation/bubbled.ts). */
  readonly delegations?: Delegations | undefined
}

const Outcome = Schema.Struct({ toolCallId: Schema.String, toolName: Schema.String, outcome: Schema.String })

/** What an approval row keeps to continue its call (its messages are the SDK's, written by this service). */
const State = Schema.Struct({
  callId: Schema.String,
  startedAt: Schema.String,
  input: Schema.Unknown,
  options: GenerationOptions,
  messages: Schema.Array(Schema.Unknown),
  newMessages: Schema.Array(Schema.Unknown),
  /** The workflow execution whose step made the call (CallRequest's `boundTo`). */
  boundTo: Schema.optional(Schema.String),
  /** Its delegate_task calls stopped on their sub-agents' approvals. */
  delegations: Schema.optional(Schema.Array(StoredDelegation)),
  prior: Schema.Struct({
    usage: Usage,
    toolCalls: Schema.Array(ToolCallRecord),
    toolResults: Schema.Array(ToolResultRecord),
    outcomes: Schema.Array(Outcome)
  })
})
type State = typeof State.Type
const decodeState = Schema.decodeUnknown(State)

const APPROVAL_PARTS: ReadonlySet<string> = new Set(["tool-approval-request", "tool-approval-response"])

/** Whether a caller's messages carry tool approvals (only the service's own rows may answer them). */
export const callerApprovalParts = (messages: ReadonlyArray<ModelMessage>): boolean =>
  messages.some((message) =>
    typeof message.content !== "string" && message.content.some((part) => APPROVAL_PARTS.has(part.type))
  )

/** The approval requests the call's last step stopped on. */
export const requestsOf = (steps: ReadonlyArray<StepResult<ToolSet>>): Array<Omit<PendingApproval, "expiresAt">> =>
  (steps.at(-1)?.content ?? []).flatMap((part) =>
    part.type === "tool-approval-request"
      ? [{
        approvalId: part.approvalId,
        toolName: part.toolCall.toolName,
        toolCallId: part.toolCall.toolCallId,
        input: part.toolCall.input
      }]
      : []
  )

export const addUsage = (a: Usage, b: Usage): Usage => ({
  promptTokens: a.promptTokens + b.promptTokens,
  completionTokens: a.completionTokens + b.completionTokens,
  totalTokens: a.totalTokens + b.totalTokens,
  cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
  reasoningTokens: a.reasoningTokens + b.reasoningTokens
})

export const NO_PRIOR: Prior = {
  usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 },
  toolCalls: [],
  toolResults: [],
  outcomes: []
}

/** What the whole call did: its earlier part's and this part's. */
export const withPrior = (prior: Prior, now: Prior): Prior => ({
  usage: addUsage(prior.usage, now.usage),
  toolCalls: [...prior.toolCalls, ...now.toolCalls],
  toolResults: [...prior.toolResults, ...now.toolResults],
  outcomes: [...prior.outcomes, ...now.outcomes]
})

/** The rows of a call that stopped on approval requests, with what it needs to continue. */
export const newApprovals = (args: {
  readonly env: GenerationEnv
  readonly agent: AgentDefinition
  readonly request: CallRequest
  readonly callId: string
  readonly startedAt: string
  readonly messages: ReadonlyArray<ModelMessage>
  readonly newMessages: ReadonlyArray<ModelMessage>
  readonly requests: ReadonlyArray<Omit<PendingApproval, "expiresAt">>
  readonly prior: Prior
  readonly recordedInput?: unknown
  readonly delegations?: Delegations | undefined
}): { readonly rows: NewApprovals; readonly pending: Array<PendingApproval> } => {
  const { requests, stored } = bubbled(args.requests, args.delegations)
  const expiresAt = new Date(Date.now() + (args.env.approvals?.ttlMs ?? 24 * 3600 * 1000))
  const { approvals: _, ...options } = args.request.options ?? {}
  const state: typeof State.Encoded = {
    callId: args.callId,
    startedAt: args.startedAt,
    // What the history entry records (a chat's last user message, not the whole conversation it sent).
    input: args.recordedInput ?? recordedInput(args.request),
    options,
    messages: args.messages,
    newMessages: args.newMessages,
    ...(args.request.boundTo === undefined ? {} : { boundTo: args.request.boundTo }),
    ...(stored === undefined ? {} : { delegations: stored }),
    prior: args.prior
  }
  return {
    rows: {
      agentId: args.agent.id,
      callId: args.callId,
      owner: args.request.owner,
      conversationId: options.conversationId,
      requests,
      state,
      expiresAt
    },
    pending: requests.map((one) => ({ ...one, expiresAt: expiresAt.toISOString() }))
  }
}

/** The stored messages with the answers as the SDK reads them: in the last message, a tool message. */
const withAnswers = (
  messages: ReadonlyArray<ModelMessage>,
  answers: ReadonlyArray<AnsweredApproval>
): Array<ModelMessage> => {
  const parts = answers.map((answer) => ({
    type: "tool-approval-response" as const,
    approvalId: answer.approvalId,
    approved: answer.approved,
    ...(answer.reason === undefined ? {} : { reason: answer.reason })
  }))
  const last = messages.at(-1)
  return last?.role === "tool"
    ? [...messages.slice(0, -1), { ...last, content: [...last.content, ...parts] }]
    : [...messages, { role: "tool", content: parts }]
}

/**
 * Answers the approvals the request names (each once, owner-checked) and gives back the call they
 * stopped: its request as first made (with this caller's user and owner) and where it continues.
 */
export const resume = (
  env: GenerationEnv,
  agent: AgentDefinition,
  request: CallRequest
): Effect.Effect<
  { readonly request: CallRequest; readonly resumed: Resumed },
  NotFound | Conflict | ValidationError | ExecutionFailed | GuardrailBlocked
> =>
  Effect.gen(function*() {
    const approvals = env.approvals
    const answers = request.options?.approvals ?? []
    if (approvals === undefined) {
      return yield* new ExecutionFailed({ message: "Tool approval is not available in this service" })
    }
    if (request.input !== undefined) {
      return yield* ValidationError.fromIssues([{
        path: ["input"],
        message: "must be left out when answering approvals (options.approvals)"
      }])
    }
    return yield* continueAnswered(env, agent, answers, request)
  })

/** Answers the approvals (each once, owner-checked) and gives back the call they stopped, to continue. */
export const continueAnswered = (
  env: GenerationEnv,
  agent: AgentDefinition,
  answers: ReadonlyArray<ApprovalAnswer>,
  caller: CallRequest
): Effect.Effect<
  { readonly request: CallRequest; readonly resumed: Resumed },
  NotFound | Conflict | ValidationError | ExecutionFailed | GuardrailBlocked
> =>
  Effect.gen(function*() {
    const approvals = env.approvals
    if (approvals === undefined) {
      return yield* new ExecutionFailed({ message: "Tool approval is not available in this service" })
    }
    // Checked before the answers are taken: a blocked reason leaves its approval pending.
    const options = caller.options ?? {}
    const checked = agent.inputGuardrails?.length
      ? yield* guardReasons(agent, {
        context: options.context ?? {},
        user: caller.user ?? null,
        userId: options.userId,
        conversationId: options.conversationId,
        ...(caller.owner === undefined ? {} : { owner: caller.owner })
      }, answers)
      : answers
    const answered = yield* approvals.store.answer(agent.id, checked, caller.owner, {
      expired: caller.approvalsExpired,
      boundTo: caller.boundTo
    })
    const state: State = yield* decodeState(answered.state).pipe(Effect.orDie)
    yield* approvalAnswered(answered.answers, answered.requestedIn)
    // The sub-agents' answers continue them; their delegate_task calls are then this call's approved ones.
    const delegated = state.delegations === undefined
      ? undefined
      : yield* continueDelegations(env, agent, state.delegations, answered.answers, caller)
    const own = delegated === undefined ? answered.answers : [
      ...answered.answers.filter((one) => !delegated.subApprovalIds.has(one.approvalId)),
      ...delegated.answers
    ]
    return {
      request: {
        input: state.input as CallRequest["input"],
        options: state.options,
        user: caller.user,
        owner: caller.owner,
        boundTo: state.boundTo
      },
      resumed: { ...resumedOf(state, own), ...(delegated === undefined ? {} : { delegations: delegated.delegations }) }
    }
  })

/** Where a stored call continues with these answers. */
const resumedOf = (state: State, answers: ReadonlyArray<AnsweredApproval>): Resumed => ({
  callId: state.callId,
  startedAt: state.startedAt,
  messages: withAnswers(state.messages as ReadonlyArray<ModelMessage>, answers),
  newMessages: state.newMessages as Array<ModelMessage>,
  approved: new Map(answers.filter((one) => one.approved).map((one) => [one.toolCallId, one.inputHash])),
  prior: state.prior,
  answers
})

/**
 * Continues the sub-agents stopped on the answered approvals (each with its own answers; a further
 * approval their tools ask for is refused, as in any delegated task) and gives back the delegate_task
 * calls they held, approved, with their results.
 */
const continueDelegations = (
  env: GenerationEnv,
  agent: AgentDefinition,
  stored: ReadonlyArray<StoredDelegation>,
  answers: ReadonlyArray<AnsweredApproval>,
  caller: CallRequest
) =>
  Effect.gen(function*() {
    const delegations: Delegations = new Map()
    for (const one of stored) {
      const continued = yield* Effect.forEach(one.stopped, (sub) => continueSub(env, agent, sub, answers, caller), {
        concurrency: "unbounded"
      })
      delegations.set(one.toolCallId, { answers: [...one.answers, ...continued], stopped: [] })
    }
    return {
      delegations,
      subApprovalIds: new Set(stored.flatMap((one) => one.stopped.flatMap((sub) => sub.approvalIds))),
      answers: stored.map((one): AnsweredApproval => ({
        approvalId: one.approvalId,
        approved: true,
        toolName: DELEGATE_TASK,
        toolCallId: one.toolCallId,
        inputHash: inputHash(DELEGATE_TASK, one.input)
      }))
    }
  })

const continueSub = (
  env: GenerationEnv,
  agent: AgentDefinition,
  sub: StoredDelegation["stopped"][number],
  answers: ReadonlyArray<AnsweredApproval>,
  caller: CallRequest
): Effect.Effect<SubAnswer> => {
  const target = agent.subAgents?.find((one) => one.id === sub.agentId)
  if (target === undefined || env.runSubAgent === undefined) {
    return Effect.succeed({ agentId: sub.agentId, error: `${sub.agentId} is no longer a sub-agent of ${agent.id}` })
  }
  const run = env.runSubAgent
  const ids = new Set(sub.approvalIds)
  return decodeState(sub.state).pipe(
    Effect.orDie,
    Effect.flatMap((state) =>
      run(target, {
        input: state.input as CallRequest["input"],
        options: state.options,
        user: caller.user,
        owner: caller.owner,
        delegated: true,
        continued: resumedOf(state, answers.filter((one) => ids.has(one.approvalId)))
      })
    ),
    Effect.map((result): SubAnswer => ({ agentId: target.id, agentName: target.name, response: result.text })),
    Effect.catchAll((error) => Effect.succeed({ agentId: target.id, error: error.message }))
  )
}
