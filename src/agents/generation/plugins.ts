/**
 * The generation core's plug-in points: what tool approval, delegation and guardrails implement to
 * take part in a call (approvals/plugin.ts, delegation/plugin.ts, guardrails/plugin.ts), and where a
 * call's progress may be committed as it goes. They are plugged in once, where the registry composes
 * generation (agents/plugged.ts); the core calls one only for an agent or a request that uses it.
 */
import type {
  ModelMessage,
  SingleToolApprovalFunction,
  StepResult,
  streamText,
  ToolApprovalConfiguration,
  ToolSet
} from "ai"
import type { Effect, Option, Stream, Tracer } from "effect"
import type { Conflict, ExecutionFailed, GuardrailBlocked, NotFound, ValidationError } from "../../core/errors.js"
import type { Tool, ToolApprovalContext } from "../../tools/Tool.js"
import type { AgentDefinition } from "../Agent.js"
import type { ModelRef, TextResult } from "../AgentsSchemas.js"
import type { AgentCallContext } from "../callContext.js"
import type {
  ApprovalAnswer,
  ApprovedCalls,
  Blocked,
  CallRequest,
  Continued,
  Delegations,
  Done,
  NewApprovals,
  ObjectEvent,
  Outcome,
  PendingApproval,
  PreparedCall,
  Prior,
  Resumed,
  StreamPart
} from "./contract.js"
import type { StreamApprovals, StreamOutcome } from "./eventStream.js"

// Tool approval (issue #32)

export type ContinueError = NotFound | Conflict | ValidationError | ExecutionFailed | GuardrailBlocked

/** A call stopped on approval requests: what its rows keep to continue it. */
export interface Stop {
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
}

/** Runs a tool that may need approval, only when it may run (`run` otherwise never starts). */
export type ToolGate = <A>(tool: Tool, input: unknown, toolCallId: string, run: () => Promise<A>) => Promise<A>

export interface ApprovalsPlugin {
  /** The SDK's signing secret for the approval round trip (none: unsigned). */
  readonly secret: string | undefined
  /** Answers a request's `options.approvals` (each once, owner-checked): the call they stopped, to continue. */
  readonly resume: (agent: AgentDefinition, request: CallRequest) => Effect.Effect<Continued, ContinueError>
  /** The answers a /chat request carries (its last message's `approval-responded` parts); undefined when none. */
  readonly chatAnswers: (request: CallRequest) => ReadonlyArray<ApprovalAnswer> | undefined
  /** Answers these and gives back the call they stopped, to continue. */
  readonly continueAnswered: (
    agent: AgentDefinition,
    answers: ReadonlyArray<ApprovalAnswer>,
    caller: CallRequest
  ) => Effect.Effect<Continued, ContinueError>
  /**
   * The SDK's `toolApproval` for a call's tools, with the checks of the tools the core adds (`others`);
   * undefined when none may need approval (the call then pays nothing).
   */
  readonly toolApproval: (
    tools: ReadonlyArray<Tool>,
    caller: ToolApprovalContext,
    others?: Record<string, SingleToolApprovalFunction<unknown, unknown, unknown>>
  ) => ToolApprovalConfiguration<ToolSet, any> | undefined
  /** How a call's tools that may need approval run: a call a human approved, or an input their check lets through. */
  readonly gate: (approved: ApprovedCalls | undefined, caller: ToolApprovalContext, delegated: boolean) => ToolGate
  /** The rows of a call stopped on approval requests, and the pending approvals its caller is told of. */
  readonly stop: (stop: Stop) => { readonly rows: NewApprovals; readonly pending: Array<PendingApproval> }
  /** Counts the requests a one-shot call stopped on. */
  readonly requested: (pending: ReadonlyArray<PendingApproval>) => Effect.Effect<void>
  /** Stores a stopped call's rows, linked to the current span. */
  readonly keep: (rows: NewApprovals) => Effect.Effect<void>
  /** How a streamed call stores the requests it stops on (with the SDK's response messages). */
  readonly streamed: (
    agent: AgentDefinition,
    request: CallRequest,
    prepared: PreparedCall,
    responseMessages: PromiseLike<ReadonlyArray<ModelMessage>>,
    span: Tracer.Span
  ) => StreamApprovals
  /** A chat call's SDK stream with the requests it stops on held until they are stored. */
  readonly chatParts: (
    approvals: StreamApprovals,
    record: (outcome: StreamOutcome) => Promise<void>,
    recordsCompleted: boolean,
    answered: () => ModelRef,
    resumed: Resumed | undefined
  ) => TransformStream<StreamPart, StreamPart>
}

// Delegation (delegate_task)

export interface DelegationPlugin {
  /** The name of its tool. */
  readonly toolName: string
  /** The tool, for a call of an agent with sub-agents. */
  readonly tool: (agent: AgentDefinition, call: AgentCallContext, delegations: Delegations) => Tool
  /** Its approval check where a human can be asked: it runs the sub-agents, and asks when one of them stopped. */
  readonly approval: (
    agent: AgentDefinition,
    call: AgentCallContext,
    delegations: Delegations,
    parent: Option.Option<Tracer.AnySpan>,
    signal: AbortSignal
  ) => SingleToolApprovalFunction<unknown, unknown, unknown>
}

// Guardrails

/** A call's messages through its input guardrails. */
export interface GuardedMessages {
  /** The messages the model reads. */
  readonly messages: Array<ModelMessage>
  /** What memory keeps of a client-held conversation's request (its last user message, guarded). */
  readonly remembered?: Array<ModelMessage> | undefined
  /** The history entry's input, when a rewrite changed what the request's would record. */
  readonly recordedInput?: unknown
}

export interface GuardHooks {
  /** Stops the model call (after a block). */
  readonly abort: () => void
  /** When given, the guarded stream records the call itself (for /chat, whose SDK callbacks see the unguarded text). */
  readonly record?: ((outcome: Outcome) => Promise<void>) | undefined
}

/** A one-shot call's answer through the output guardrails: rewritten, or blocked. */
export type GuardDone<A> = <E>(
  self: Effect.Effect<Done<A>, E>
) => Effect.Effect<Done<A> | Blocked, E | ExecutionFailed>

export interface GuardrailsPlugin {
  /** The caller's messages through the agent's input guardrails: rewritten, or refused. */
  readonly input: (
    agent: AgentDefinition,
    call: AgentCallContext,
    messages: ReadonlyArray<ModelMessage>,
    field: string,
    request: CallRequest
  ) => Effect.Effect<GuardedMessages, ValidationError | GuardrailBlocked | ExecutionFailed>
  /** /text's answer: its text and tool results. */
  readonly text: (
    agent: AgentDefinition,
    prepared: PreparedCall
  ) => <A extends TextAnswer, E>(
    self: Effect.Effect<Done<A>, E>
  ) => Effect.Effect<Done<A> | Blocked, E | ExecutionFailed>
  /** /object's answer, as its JSON text. */
  readonly object: (agent: AgentDefinition, prepared: PreparedCall) => GuardDone<unknown>
  /** The SDK's stream parts with the guardrails applied as the text streams (a hold-back) and to each tool result. */
  readonly stream: (
    agent: AgentDefinition,
    call: AgentCallContext,
    parent: Option.Option<Tracer.AnySpan>,
    hooks: GuardHooks
  ) => TransformStream<StreamPart, StreamPart>
  /** /stream-object's events: the finished object only, guarded. */
  readonly objectEvents: (
    agent: AgentDefinition,
    prepared: PreparedCall,
    result: ReturnType<typeof streamText>,
    hooks: GuardHooks,
    failed: (error: unknown) => ExecutionFailed | ValidationError
  ) => Stream.Stream<ObjectEvent, ExecutionFailed | ValidationError | GuardrailBlocked>
}

/** What /text's guard reads of its answer. */
export interface TextAnswer {
  readonly text: string
  readonly toolResults: TextResult["toolResults"]
}

// Commits (the durable agents' plug-in point)

/** The call a commit belongs to. */
export interface CommitRef {
  readonly agentId: string
  readonly callId: string
  readonly call: AgentCallContext
}

/** A tool's run, as the commit plug-in is told of it. */
export interface ToolRun {
  readonly toolName: string
  readonly toolCallId: string
  readonly input: unknown
  readonly output: unknown
}

/**
 * Where a call's progress is committed as it happens: each step's end and each tool's result, awaited
 * before the call goes on. None is plugged in by default, and a call then pays nothing for it.
 */
export interface CommitPlugin {
  readonly stepEnd: (ref: CommitRef, step: StepResult<ToolSet>) => Effect.Effect<void>
  readonly toolResult: (ref: CommitRef, run: ToolRun) => Effect.Effect<void>
}
