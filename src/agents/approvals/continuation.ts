/**
 * A call stopped on tool approval requests (issue #32): the rows that keep what continues it, and its
 * continuation once they are answered (the sub-agents stopped under its delegate_task calls first).
 */
import type { ModelMessage } from "ai"
import { Effect, Schema } from "effect"
import { ValidationError } from "../../core/errors.js"
import type { AgentDefinition } from "../Agent.js"
import { GenerationOptions, ToolCallRecord, ToolResultRecord, Usage } from "../AgentsSchemas.js"
import { bubbled, StoredDelegation } from "../delegation/bubbled.js"
import { DELEGATE_TASK, type RunSubAgent } from "../delegation/delegateTask.js"
import type {
  AnsweredApproval,
  ApprovalAnswer,
  CallRequest,
  Continued,
  Delegations,
  NewApprovals,
  PendingApproval,
  Resumed,
  SubAnswer
} from "../generation/contract.js"
import { recordedInput } from "../generation/messages.js"
import type { ContinueError, Stop } from "../generation/plugins.js"
import { guardReasons } from "../guardrails/input.js"
import { type ApprovalStore, inputHash } from "./ApprovalStore.js"
import { approvalAnswered } from "./telemetry.js"

/** What continuing a call needs: where the rows are, how long they wait, how a sub-agent is called. */
export interface ContinuationDeps {
  readonly store: ApprovalStore["Type"]
  readonly ttlMs: number
  readonly runSubAgent?: RunSubAgent | undefined
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

/** The rows of a call that stopped on approval requests, with what it needs to continue. */
export const newApprovals = (
  ttlMs: number,
  args: Stop
): { readonly rows: NewApprovals; readonly pending: Array<PendingApproval> } => {
  const { requests, stored } = bubbled(args.requests, args.delegations)
  const expiresAt = new Date(Date.now() + ttlMs)
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
  deps: ContinuationDeps,
  agent: AgentDefinition,
  request: CallRequest
): Effect.Effect<Continued, ContinueError> =>
  request.input !== undefined
    ? ValidationError.fromIssues([{
      path: ["input"],
      message: "must be left out when answering approvals (options.approvals)"
    }])
    : continueAnswered(deps, agent, request.options?.approvals ?? [], request)

/** Answers the approvals (each once, owner-checked) and gives back the call they stopped, to continue. */
export const continueAnswered = (
  deps: ContinuationDeps,
  agent: AgentDefinition,
  answers: ReadonlyArray<ApprovalAnswer>,
  caller: CallRequest
): Effect.Effect<Continued, ContinueError> =>
  Effect.gen(function*() {
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
    const answered = yield* deps.store.answer(agent.id, checked, caller.owner, {
      expired: caller.approvalsExpired,
      boundTo: caller.boundTo
    })
    const state: State = yield* decodeState(answered.state).pipe(Effect.orDie)
    yield* approvalAnswered(answered.answers, answered.requestedIn)
    // The sub-agents' answers continue them; their delegate_task calls are then this call's approved ones.
    const delegated = state.delegations === undefined
      ? undefined
      : yield* continueDelegations(deps, agent, state.delegations, answered.answers, caller)
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
  deps: ContinuationDeps,
  agent: AgentDefinition,
  stored: ReadonlyArray<StoredDelegation>,
  answers: ReadonlyArray<AnsweredApproval>,
  caller: CallRequest
) =>
  Effect.gen(function*() {
    const delegations: Delegations = new Map()
    for (const one of stored) {
      const continued = yield* Effect.forEach(one.stopped, (sub) =>
        continueSub(deps.runSubAgent, agent, sub, answers, caller), {
        concurrency: "unbounded"
      })
      delegations.set(one.toolCallId, { answers: [...one.answers, ...continued], stopped: [] })
    }
    return {
      delegations,
      subApprovalIds: new Set(stored.flatMap((one) =>
        one.stopped.flatMap((sub) =>
          sub.approvalIds
        )
      )),
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
  run: RunSubAgent | undefined,
  agent: AgentDefinition,
  sub: StoredDelegation["stopped"][number],
  answers: ReadonlyArray<AnsweredApproval>,
  caller: CallRequest
): Effect.Effect<SubAnswer> => {
  const target = agent.subAgents?.find((one) => one.id === sub.agentId)
  if (target === undefined || run === undefined) {
    return Effect.succeed({ agentId: sub.agentId, error: `${sub.agentId} is no longer a sub-agent of ${agent.id}` })
  }
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
