import { Schema } from "effect"

const Scope = Schema.Literal("user", "conversation")

export const WorkingMemoryQuery = Schema.Struct({
  conversationId: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  userId: Schema.optional(Schema.String.pipe(Schema.minLength(1)))
})

export const WorkingMemoryView = Schema.Struct({
  agentId: Schema.String,
  scope: Scope,
  /** The record, or null when none was saved. */
  value: Schema.Unknown,
  /** 0 when none was saved; each replacement adds one. */
  version: Schema.Number,
  updatedAt: Schema.NullOr(Schema.String)
}).annotations({ identifier: "WorkingMemory" })

export const WorkingMemoryDeleted = Schema.Struct({
  agentId: Schema.String,
  scope: Scope,
  deleted: Schema.Boolean
}).annotations({ identifier: "WorkingMemoryDeleted" })
