/**
 * The values of a call that the generation core shares with the features plugged into it (plugins.ts):
 * the request, the prepared call, its outcome, and what a call stopped on tool approval keeps (its
 * requests, answers and sub-agents' outcomes). Types only, so both sides can read them.
 */
import type { LanguageModelV4 } from "@ai-sdk/provider"
import type { ModelMessage, StepResult, streamText, ToolApprovalConfiguration, ToolSet, UIMessage } from "ai"
import type { Cause, Option, Tracer } from "effect"
import type { GuardrailBlocked } from "../../core/errors.js"
import type { AgentInput, GenerationOptions, HistoryEntry, ModelRef, TextResult, Usage } from "../AgentsSchemas.js"
import type { AgentCallContext, Owner } from "../callContext.js"
import type { CallSettings } from "./settings.js"
import type { ToolOutcome } from "./toolOutcomes.js"

/**
 * A conversation the client holds: `input` is its whole context (memory is not loaded on top of it);
 * history records the last user message as the call's input, and memory keeps only that message (when
 * new) and the answer, which on a regenerate replaces the last one stored.
 */
export interface ClientConversation {
  readonly lastUserMessage: UIMessage | undefined
  /** Whether the last user message is new (the client's last message, sent to get an answer). */
  readonly storesUserMessage: boolean
  readonly replacesLastAnswer: boolean
}

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
  /** Tells the commit plug-in of each step's end (plugins.ts: none unless one is plugged in). */
  readonly onStepEnd?: ((step: StepResult<ToolSet>) => Promise<void>) | undefined
}

/** What a finished (or stopped) call leaves for its history entry, memory and hooks. */
export interface Outcome {
  /** `pending`: stopped on approval requests; the finished call is recorded once, by its continuation. */
  readonly status: HistoryEntry["status"] | "pending"
  /** The approval requests a pending call stores. */
  readonly approvals?: NewApprovals | undefined
  readonly output?: string | undefined
  readonly usage?: Usage | undefined
  readonly toolCalls?: TextResult["toolCalls"] | undefined
  readonly toolResults?: ReadonlyArray<ToolOutcome> | undefined
  /** The model that answered. */
  readonly model?: ModelRef | undefined
  /** Why an errored call failed (logged with its line). */
  readonly cause?: Cause.Cause<unknown> | undefined
}

/** A one-shot call's result with the outcome it records. */
export interface Done<A> {
  readonly result: A
  readonly outcome: Outcome
}

/** A blocked answer: recorded as `blocked` (its usage kept, its text not), then failed with the block. */
export interface Blocked {
  readonly blocked: GuardrailBlocked
  readonly outcome: Outcome
}

/** The SDK's stream parts (a streamed call's `stream`). */
export type StreamPart = ReturnType<typeof streamText> extends { stream: AsyncIterable<infer P> } ? P : never

export type ObjectEvent =
  | { readonly type: "partial"; readonly object: unknown }
  | {
    readonly type: "finish"
    readonly object: unknown
    readonly finishReason: string
    readonly usage: Usage
    readonly model: ModelRef
  }

// Tool approval (issue #32)

/** A tool call waiting for a human, as the caller sees it (`pendingApprovals`, the stream's frame). */
export interface PendingApproval {
  readonly approvalId: string
  readonly toolName: string
  readonly toolCallId: string
  readonly input: unknown
  readonly expiresAt: string
  /** A sub-agent's request (through delegate_task): the sub-agent whose tool waits. */
  readonly agentId?: string | undefined
}

/** The requests of one generation, stored with what it needs to continue. */
export interface NewApprovals {
  readonly agentId: string
  /** The call's id (its history entry's, once it finishes). */
  readonly callId: string
  readonly owner: Owner | undefined
  readonly conversationId: string | undefined
  readonly requests: ReadonlyArray<Omit<PendingApproval, "expiresAt">>
  readonly state: unknown
  readonly expiresAt: Date
  /** The requesting call's span: the answering call's span links to it. */
  readonly trace?: RequestTrace | undefined
}

export interface RequestTrace {
  readonly traceId: string
  readonly spanId: string
}

export interface ApprovalAnswer {
  readonly approvalId: string
  readonly approved: boolean
  readonly reason?: string | undefined
  /** The tool call the answer is about, as the client holds it (/chat): it counts only for that very call. */
  readonly expect?: { readonly toolName: string; readonly inputHash: string } | undefined
}

export interface AnsweredApproval extends ApprovalAnswer {
  readonly toolName: string
  readonly toolCallId: string
  readonly inputHash: string
}

/**
 * What a call knows of its tools' approvals: the tool calls a human approved in this continuation
 * (tool call id to the digest of the tool and input approved), none on a first call.
 */
export type ApprovedCalls = ReadonlyMap<string, string>

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

/** A stopped call to continue: its request as first made (with this caller's user and owner) and where it goes on. */
export interface Continued {
  readonly request: CallRequest
  readonly resumed: Resumed
}

// Delegation (delegate_task)

/** One sub-agent's part of delegate_task's result (delegation/delegateTask.ts has its schema). */
export interface SubAnswer {
  readonly agentId: string
  readonly agentName?: string | undefined
  readonly response?: string | undefined
  readonly error?: string | undefined
}

/** A sub-agent call that stopped on approvals: its requests and what continues it. */
export interface StoppedSub {
  readonly agentId: string
  readonly approvals: NewApprovals
}

/** What the sub-agents of one delegate_task call did. */
export interface DelegationOutcome {
  readonly answers: ReadonlyArray<SubAnswer>
  readonly stopped: ReadonlyArray<StoppedSub>
}

/** A call's delegate_task outcomes by tool call id: the sub-agents run once per call of the tool. */
export type Delegations = Map<string, DelegationOutcome>
