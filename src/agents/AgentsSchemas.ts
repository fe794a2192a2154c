import { Schema } from "effect"
import { JsonSchemaObject } from "../json-schema/JsonSchemaObject.js"

const Probability = Schema.Number.pipe(Schema.between(0, 1, { message: () => "must be a number from 0 to 1" }))
const Penalty = Schema.Number.pipe(Schema.between(0, 2, { message: () => "must be a number from 0 to 2" }))
const PositiveInt = Schema.Int.pipe(Schema.positive({ message: () => "must be a positive integer" }))
const Record = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const ExperimentalOutput = Schema.Union(
  Schema.Struct({ type: Schema.Literal("object"), schema: JsonSchemaObject }),
  Schema.Struct({ type: Schema.Literal("text") })
).annotations({ identifier: "ExperimentalOutput" })

/** A human's answer to a tool call waiting for approval (issue #32). */
export const ApprovalAnswer = Schema.Struct({
  approvalId: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  approved: Schema.Boolean,
  reason: Schema.optional(Schema.String.pipe(Schema.maxLength(2000)))
}).annotations({ identifier: "ApprovalAnswer" })

export const GenerationOptions = Schema.Struct({
  userId: Schema.optional(Schema.String),
  conversationId: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  contextLimit: Schema.optional(Schema.Int.pipe(Schema.between(0, 1000))),
  maxSteps: Schema.optional(PositiveInt.pipe(Schema.lessThanOrEqualTo(100))),
  temperature: Schema.optional(Probability),
  maxOutputTokens: Schema.optional(PositiveInt),
  topP: Schema.optional(Probability),
  frequencyPenalty: Schema.optional(Penalty),
  presencePenalty: Schema.optional(Penalty),
  seed: Schema.optional(Schema.Int),
  stopSequences: Schema.optional(Schema.Array(Schema.String)),
  providerOptions: Schema.optional(Schema.Record({ key: Schema.String, value: Record })),
  context: Schema.optional(Record),
  experimental_output: Schema.optional(ExperimentalOutput),
  approvals: Schema.optional(Schema.Array(ApprovalAnswer).pipe(Schema.minItems(1), Schema.maxItems(100))).annotations({
    description:
      "answers to a call's pendingApprovals (every one of them); sent without `input`, the call continues where it stopped"
  })
}).annotations({ identifier: "GenerationOptions" })
export type GenerationOptions = typeof GenerationOptions.Type

/** The SDK's message roles; a caller's `system` messages are dropped when the call is prepared. */
export const MessageRole = <const Roles extends ReadonlyArray<string>>(...roles: Roles) =>
  Schema.Literal(...roles).annotations({
    description: "a caller's system messages are dropped: the agent's instructions are the only system prompt"
  })

export const UIMessageInput = Schema.Struct({
  id: Schema.optional(Schema.String),
  role: MessageRole("system", "user", "assistant"),
  parts: Schema.Array(
    Schema.Struct({ type: Schema.String, text: Schema.optional(Schema.String) }, {
      key: Schema.String,
      value: Schema.Unknown
    })
  ),
  metadata: Schema.optional(Schema.Unknown)
}).annotations({ identifier: "UIMessage" })

export const ModelMessageInput = Schema.Struct({
  role: MessageRole("system", "user", "assistant", "tool"),
  content: Schema.Union(
    Schema.String,
    Schema.Array(Schema.Struct({ type: Schema.String }, { key: Schema.String, value: Schema.Unknown }))
  )
}).annotations({ identifier: "ModelMessage" })

export const AgentInput = Schema.Union(
  Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty" })),
  Schema.NonEmptyArray(UIMessageInput),
  Schema.NonEmptyArray(ModelMessageInput)
).annotations({
  identifier: "AgentInput",
  description: "a string, an array of UI messages ({role, parts}) or an array of model messages ({role, content})"
})
export type AgentInput = typeof AgentInput.Type

export const GenerateRequest = Schema.Struct({
  input: AgentInput,
  options: Schema.optional(GenerationOptions)
})

/**
 * POST /agents/:id/text and /stream: a call (`input`), or the answers to a call's pending approvals
 * (`options.approvals`, no `input`; issue #32). Decoded as one struct: which of the two a body is, and
 * that it is one of them, is checked where the call is prepared (a declared union here cost a plain call
 * about 5 % of its CPU, docs/benchmarks.md); documented as GenerateRequest | ApprovalsRequest.
 */
export const CallRequestBody = Schema.Struct({
  input: Schema.optional(AgentInput).annotations({
    description: "the call's input; left out when answering approvals (options.approvals)"
  }),
  options: Schema.optional(GenerationOptions)
})

/** A follow-up call: no `input`, the answers to a call's pending approvals (issue #32). */
export const ApprovalsRequest = Schema.Struct({
  options: Schema.Struct({
    ...GenerationOptions.fields,
    approvals: Schema.Array(ApprovalAnswer).pipe(Schema.minItems(1), Schema.maxItems(100))
  })
}).annotations({
  identifier: "ApprovalsRequest",
  description: "answers every pending approval of a call, which then continues"
})

export const ObjectRequest = Schema.Struct({
  input: AgentInput,
  schema: JsonSchemaObject,
  options: Schema.optional(GenerationOptions)
})

export const Usage = Schema.Struct({
  promptTokens: Schema.Number,
  completionTokens: Schema.Number,
  totalTokens: Schema.Number,
  cachedInputTokens: Schema.Number,
  reasoningTokens: Schema.Number
}).annotations({ identifier: "Usage" })
export type Usage = typeof Usage.Type

export const ToolCallRecord = Schema.Struct({
  toolCallId: Schema.String,
  toolName: Schema.String,
  args: Schema.Unknown
})
export const ToolResultRecord = Schema.Struct({
  toolCallId: Schema.String,
  toolName: Schema.String,
  result: Schema.Unknown
})

/** The model that answered (with a fallback list, the one that did; for a call of several steps, its last step's). */
export const ModelRef = Schema.Struct({ provider: Schema.String, modelId: Schema.String }).annotations({
  identifier: "ModelRef"
})
export type ModelRef = typeof ModelRef.Type
/** A tool call waiting for a human's approval; answered with `options.approvals` (issue #32). */
export const PendingApproval = Schema.Struct({
  approvalId: Schema.String,
  toolName: Schema.String,
  toolCallId: Schema.String,
  input: Schema.Unknown,
  expiresAt: Schema.String,
  /** Set when a sub-agent asked (through delegate_task): the sub-agent whose tool waits. */
  agentId: Schema.optional(Schema.String)
}).annotations({ identifier: "PendingApproval" })

export const TextResult = Schema.Struct({
  text: Schema.String,
  usage: Usage,
  finishReason: Schema.String,
  toolCalls: Schema.Array(ToolCallRecord),
  toolResults: Schema.Array(ToolResultRecord),
  experimental_output: Schema.optional(Schema.Unknown),
  model: Schema.optional(ModelRef),
  pendingApprovals: Schema.optional(Schema.Array(PendingApproval))
}).annotations({ identifier: "TextGenerationResult" })
export type TextResult = typeof TextResult.Type

const ToolSummary = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: JsonSchemaObject,
  needsApproval: Schema.Boolean.annotations({
    description: "true when a call may wait for a human's approval (always, or depending on its input)"
  })
})

const summaryFields = {
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  status: Schema.Literal("idle"),
  model: Schema.String,
  memory: Schema.NullOr(
    Schema.Struct({ config: Schema.Struct({ storage: Schema.String, contextLimit: Schema.Number }) })
  ),
  isTelemetryEnabled: Schema.Boolean
}

export interface AgentSummary extends Schema.Struct.Type<typeof summaryFields> {
  readonly tools: ReadonlyArray<typeof ToolSummary.Type>
  readonly subAgents: ReadonlyArray<AgentSummary>
}

export const AgentSummary: Schema.Schema<AgentSummary> = Schema.Struct({
  ...summaryFields,
  tools: Schema.Array(ToolSummary),
  subAgents: Schema.Array(Schema.suspend((): Schema.Schema<AgentSummary> => AgentSummary))
}).annotations({ identifier: "AgentSummary" })

export const AgentDetails = Schema.Struct({
  ...summaryFields,
  tools: Schema.Array(Schema.String),
  subAgents: Schema.Array(AgentSummary),
  instructions: Schema.String,
  guardrails: Schema.Struct({ input: Schema.Array(Schema.String), output: Schema.Array(Schema.String) }).annotations({
    description: "the names of the agent's input and output guardrails, in the order they run"
  }),
  workingMemory: Schema.optional(Schema.Struct({ scope: Schema.Literal("user", "conversation") })).annotations({
    description: "present when the agent keeps a working memory record (GET /agents/:id/working-memory)"
  })
}).annotations({ identifier: "AgentDetails" })
export type AgentDetails = typeof AgentDetails.Type

export const HistoryEntry = Schema.Struct({
  id: Schema.String,
  conversationId: Schema.NullOr(Schema.String),
  userId: Schema.NullOr(Schema.String),
  input: Schema.Unknown,
  output: Schema.NullOr(Schema.String),
  status: Schema.Literal("completed", "error", "cancelled", "blocked"),
  startTime: Schema.String,
  endTime: Schema.String,
  usage: Schema.NullOr(Usage),
  toolCalls: Schema.Array(ToolCallRecord),
  model: Schema.optional(ModelRef),
  truncated: Schema.optional(
    Schema.Struct({
      inputBytes: Schema.optional(Schema.Number),
      outputBytes: Schema.optional(Schema.Number),
      limit: Schema.Number
    }).annotations({
      description:
        "Only in a history page, for an entry whose input (as JSON) or output is over `limit` bytes: that field is " +
        "the start of its text (the input's JSON text, as a string), and `inputBytes` / `outputBytes` its whole size; " +
        "GET /agents/:id/history/:entryId answers the whole entry"
    })
  )
}).annotations({ identifier: "AgentHistoryEntry" })
export type HistoryEntry = typeof HistoryEntry.Type

export const HistoryPage = Schema.Struct({
  entries: Schema.Array(HistoryEntry),
  pagination: Schema.Struct({
    page: Schema.Number,
    limit: Schema.Number,
    total: Schema.Number,
    totalPages: Schema.Number
  })
}).annotations({ identifier: "AgentHistory" })

export const ConversationDeleted = Schema.Struct({
  agentId: Schema.String,
  conversationId: Schema.String,
  deletedMessages: Schema.Number,
  deletedHistoryEntries: Schema.Number
}).annotations({ identifier: "ConversationDeleted" })

export const AgentCard = Schema.Struct({
  protocolVersion: Schema.String,
  name: Schema.String,
  description: Schema.String,
  url: Schema.String,
  version: Schema.String,
  capabilities: Schema.Struct({ streaming: Schema.Boolean }),
  defaultInputModes: Schema.Array(Schema.String),
  defaultOutputModes: Schema.Array(Schema.String),
  skills: Schema.Array(Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    description: Schema.String,
    tags: Schema.Array(Schema.String)
  }))
}).annotations({ identifier: "AgentCard" })
