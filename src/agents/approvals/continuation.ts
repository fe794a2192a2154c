import type { ModelMessage, StepResult, ToolSet } from "ai"
import { Effect, Schema } from "effect"
import { type Conflict, ExecutionFailed, type NotFound, ValidationError } from "../../core/errors.js"
import type { AgentDefinition } from "../Agent.js"
import { GenerationOptions, type TextResult, ToolCallRecord, ToolResultRecord, Usage } from "../AgentsSchemas.js"
import type { CallRequest, GenerationEnv } from "../generation/call.js"
import type { ToolOutcome } from "../generation/toolOutcomes.js"
import { recordedInput } from "../generation/messages.js"
import type { AnsweredApproval, ApprovalAnswer, NewApprovals, PendingApproval } from "./ApprovalStore.js"
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
  messages.some((message) => typeof message.content !== "string" && message.content.some((part) => APPROVAL_PARTS.has(part.type)))

/** The approval requests the call's last step stopped on. */
export const requestsOf = (steps: ReadonlyArray<StepResult<ToolSet>>): Array<Omit<PendingApproval, "expiresAt">> =>
  (steps.at(-1)?.content ?? []).flatMap((part) =>
    part.type === "tool-approval-request"
      ? [{ approvalId: part.approvalId, toolName: part.toolCall.toolName, toolCallId: part.toolCall.toolCallId, input: part.toolCall.input }]
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
}): { readonly rows: NewApprovals; readonly pending: Array<PendingApproval> } => {
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
    prior: args.prior
  }
  return {
    rows: {
      agentId: args.agent.id,
      callId: args.callId,
      owner: args.request.owner,
      conversationId: options.conversationId,
      requests: args.requests,
      state,
      expiresAt
    },
    pending: args.requests.map((one) => ({ ...one, expiresAt: expiresAt.toISOString() }))
  }
}

/** The stored messages with the answers as the SDK reads them: in the last message, a tool message. */
const withAnswers = (messages: ReadonlyArray<ModelMessage>, answers: ReadonlyArray<AnsweredApproval>): Array<ModelMessage> => {
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
): Effect.Effect<{ readonly request: CallRequest; readonly resumed: Resumed }, NotFound | Conflict | ValidationError | ExecutionFailed> =>
  Effect.gen(function*() {
    const approvals = env.approvals
    const answers = request.options?.approvals ?? []
    if (approvals === undefined) return yield* new ExecutionFailed({ message: "Tool approval is not available in this service" })
    if (request.input !== undefined) {
      return yield* ValidationError.fromIssues([{ path: ["input"], message: "must be left out when answering approvals (options.approvals)" }])
    }
    return yield* continueAnswered(env, agent, answers, request)
  })

/** Answers the approvals (each once, owner-checked) and gives back the call they stopped, to continue. */
export const continueAnswered = (
  env: GenerationEnv,
  agent: AgentDefinition,
  answers: ReadonlyArray<ApprovalAnswer>,
  caller: CallRequest
): Effect.Effect<{ readonly request: CallRequest; readonly resumed: Resumed }, NotFound | Conflict | ValidationError | ExecutionFailed> =>
  Effect.gen(function*() {
    const approvals = env.approvals
    if (approvals === undefined) return yield* new ExecutionFailed({ message: "Tool approval is not available in this service" })
    const answered = yield* approvals.store.answer(agent.id, answers, caller.owner, { expired: caller.approvalsExpired, boundTo: caller.boundTo })
    const state: State = yield* decodeState(answered.state).pipe(Effect.orDie)
    yield* approvalAnswered(answered.answers, answered.requestedIn)
    const approved = new Map(answered.answers.filter((one) => one.approved).map((one) => [one.toolCallId, one.inputHash]))
    return {
      request: { input: state.input as CallRequest["input"], options: state.options, user: caller.user, owner: caller.owner, boundTo: state.boundTo },
      resumed: {
        callId: state.callId,
        startedAt: state.startedAt,
        messages: withAnswers(state.messages as ReadonlyArray<ModelMessage>, answered.answers),
        newMessages: state.newMessages as Array<ModelMessage>,
        approved,
        prior: state.prior,
        answers: answered.answers
      }
    }
  })
