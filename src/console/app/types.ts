/**
 * The API's payloads as they travel (the schemas' encoded side), from the service's own schemas. Only
 * types are imported: nothing of effect reaches the browser bundle.
 */
import type {
  AgentDetails as AgentDetailsSchema,
  AgentSummary,
  HistoryPage as HistoryPageSchema
} from "../../agents/AgentsSchemas.js"
import type { WorkingMemoryView } from "../../agents/workingMemory/schemas.js"
import type {
  LogEntry as LogEntrySchema,
  TraceSummary as TraceSummarySchema
} from "../../observability/ObservabilitySchemas.js"
import type { SpanRecord } from "../../observability/Span.js"
import type { WebhookDeliveryView } from "../../webhooks/WebhookSchemas.js"
import type {
  ExecutionRecord as ExecutionRecordSchema,
  ExecutionState as ExecutionStateSchema,
  RunStarted as RunStartedSchema,
  WorkflowDetails as WorkflowDetailsSchema,
  WorkflowEvent as WorkflowEventSchema,
  WorkflowSummary as WorkflowSummarySchema
} from "../../workflows/api/WorkflowSchemas.js"
import type {
  ScheduleSummary as ScheduleSummarySchema,
  ScheduleView as ScheduleViewSchema
} from "../../workflows/schedules/ScheduleSchemas.js"

export type Agent = typeof AgentSummary.Encoded
export type AgentDetails = typeof AgentDetailsSchema.Encoded
export type WorkingMemory = typeof WorkingMemoryView.Encoded
export type HistoryPage = typeof HistoryPageSchema.Encoded
export type HistoryEntry = HistoryPage["entries"][number]
export type WorkflowSummary = typeof WorkflowSummarySchema.Encoded
export type WorkflowDetails = typeof WorkflowDetailsSchema.Encoded
export type ExecutionState = typeof ExecutionStateSchema.Encoded
export type ExecutionRecord = typeof ExecutionRecordSchema.Encoded
export type RunStarted = typeof RunStartedSchema.Encoded
export type ExecutionStatus = ExecutionState["status"]
/** A frame of an execution's stream: its events, then `workflow-result`. */
export type WorkflowFrame =
  | typeof WorkflowEventSchema.Encoded
  | {
    readonly type: "workflow-result"
    readonly executionId: string
    readonly status: ExecutionStatus
    readonly result?: unknown
    readonly error?: string
    readonly suspension?: { readonly reason: string } | null
  }
export type Span = typeof SpanRecord.Encoded
export type TraceSummary = typeof TraceSummarySchema.Encoded
export type LogEntry = typeof LogEntrySchema.Encoded
export type JsonSchema = { readonly [key: string]: unknown }

export type ScheduleView = typeof ScheduleViewSchema.Encoded
export type ScheduleSummary = typeof ScheduleSummarySchema.Encoded
export type WebhookDelivery = typeof WebhookDeliveryView.Encoded
