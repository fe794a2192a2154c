import { Schema } from "effect"
/** What the observability stores hold and serve, shared by the stores and the API. */

/** Log levels, least severe first. */
export const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const

export const Level = Schema.Literal(...LEVELS)

export const LogEntry = Schema.Struct({
  timestamp: Schema.String,
  level: Schema.String,
  message: Schema.String,
  instance: Schema.String.annotations({ description: "the service instance that logged it (SERVICE_INSTANCE_ID)" }),
  traceId: Schema.optional(Schema.String),
  spanId: Schema.optional(Schema.String),
  agentId: Schema.optional(Schema.String),
  workflowId: Schema.optional(Schema.String),
  executionId: Schema.optional(Schema.String),
  conversationId: Schema.optional(Schema.String),
  attributes: Schema.Record({ key: Schema.String, value: Schema.Unknown })
}).annotations({ identifier: "LogEntry" })
export interface LogEntry extends Schema.Schema.Type<typeof LogEntry> {}

export const TraceSummary = Schema.Struct({
  traceId: Schema.String,
  name: Schema.String,
  entityType: Schema.NullOr(Schema.String),
  entityId: Schema.NullOr(Schema.String),
  startTime: Schema.String,
  endTime: Schema.String,
  durationMs: Schema.Number,
  status: Schema.String,
  spanCount: Schema.Number
}).annotations({ identifier: "TraceSummary" })
export interface TraceSummary extends Schema.Schema.Type<typeof TraceSummary> {}
