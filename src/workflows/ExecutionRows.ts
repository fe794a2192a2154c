import { Predicate, Schema } from "effect"
import { column, NullableJson, NumberColumn, optionalColumn, optionalJson } from "../storage/ColumnSchemas.js"
import { ExecutionMetadata, ExecutionStatus, type WorkflowEvent, WorkflowEventType } from "./WorkflowSchemas.js"

/** Executions and events as the store keeps them, decoded from their SQL rows. */

const Json = Schema.parseJson()
const JsonRecord = Schema.parseJson(Schema.Record({ key: Schema.String, value: Schema.Unknown }))

export const Suspension = Schema.Struct({
  suspendedAt: Schema.String,
  reason: Schema.String,
  stepIndex: Schema.Number,
  stepId: Schema.String,
  data: Schema.optional(Schema.Unknown)
})
export interface Suspension extends Schema.Schema.Type<typeof Suspension> {}

/**
 * An execution as stored, from its row (`SELECT *`): the checkpoint is `stepIndex` (next step),
 * `currentData` (its input) and `stepData`.
 */
export const ExecutionFromRow = Schema.Struct({
  id: Schema.String,
  workflowId: column(Schema.String, "workflow_id"),
  workflowName: column(Schema.String, "workflow_name"),
  status: ExecutionStatus,
  input: Json,
  context: JsonRecord,
  user: column(Schema.NullOr(Json), "user_json"),
  /** The user the execution belongs to (under authentication; the body's userId without it), if any. */
  userId: optionalColumn(Schema.String, "user_id"),
  stepIndex: column(NumberColumn, "step_index"),
  stepData: column(JsonRecord, "step_data"),
  currentData: column(NullableJson, "current_data"),
  output: optionalJson,
  error: Schema.optionalWith(Schema.String, { nullable: true }),
  suspension: Schema.optionalWith(Schema.parseJson(Suspension), { nullable: true }),
  resumeData: optionalJson.pipe(Schema.fromKey("resume_data")),
  metadata: Schema.parseJson(ExecutionMetadata),
  version: NumberColumn,
  /** The instance whose fiber runs it (running executions only; none once released or settled). */
  owner: Schema.optionalWith(Schema.String, { nullable: true }),
  /** The number of the execution's last event. */
  lastSeq: column(NumberColumn, "last_seq"),
  /** The hash of the definition it runs under (DefinitionCompatibility); none for rows from before 0016. */
  definitionHash: optionalColumn(Schema.String, "definition_hash"),
  createdAt: column(Schema.String, "created_at"),
  updatedAt: column(Schema.String, "updated_at"),
  endedAt: optionalColumn(Schema.String, "ended_at")
})
export interface Execution extends Schema.Schema.Type<typeof ExecutionFromRow> {}

/** What a listing shows of an execution (GET /workflows/executions): no checkpoint, no step data. */
export const ExecutionListingFromRow = ExecutionFromRow.pick(
  "id", "workflowId", "workflowName", "status", "input", "metadata", "output", "createdAt", "updatedAt"
)
export interface ExecutionListing extends Schema.Schema.Type<typeof ExecutionListingFromRow> {}

/** What the supervisor compares a fiber's claim with. */
export const HolderFromRow = ExecutionFromRow.pick("id", "status", "owner", "version", "lastSeq")
export interface Holder extends Schema.Schema.Type<typeof HolderFromRow> {}

const EVENT_TYPES: ReadonlySet<unknown> = new Set(WorkflowEventType.literals)

/**
 * An event as the engine stored it: only its type is checked (the engine wrote the rest, and a page of
 * executions reads hundreds of them), and its JSON comes back as written.
 */
const StoredWorkflowEvent = Schema.declare(
  (input): input is WorkflowEvent => Predicate.hasProperty(input, "type") && EVENT_TYPES.has(input.type),
  { identifier: "WorkflowEvent" }
)

export const StoredEventFromRow = Schema.Struct({ seq: NumberColumn, event: Schema.parseJson(StoredWorkflowEvent) })
export interface StoredEvent extends Schema.Schema.Type<typeof StoredEventFromRow> {}

export interface ExecutionQuery {
  readonly workflowId?: string | undefined
  readonly status?: ExecutionStatus | undefined
  readonly from?: string | undefined
  readonly to?: string | undefined
  /** Only executions of this user (null: those without one); everyone's when absent. */
  readonly userId?: string | null | undefined
  readonly limit: number
  readonly offset: number
}

export const now = () => new Date().toISOString()

export const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))

/**
 * A hold on an execution: writes apply only while the row is `running` at this version (its epoch)
 * and, for a drive fiber, owned by its instance. Every transition from outside (suspend, resume,
 * cancel) and every claim by an instance bumps the version, so a fiber that has lost the execution
 * has each of its writes refused and stops. An outside suspend names no owner: the version is enough.
 */
export interface Claim {
  readonly id: string
  readonly version: number
  readonly owner?: string | undefined
}

/** After a step: the next step, its input and every step's output so far. */
export interface Checkpoint {
  readonly stepIndex: number
  readonly currentData: unknown
  readonly stepData: Record<string, unknown>
}

/** How a running execution ends by itself. */
export type Ending =
  | { readonly status: "completed"; readonly output: unknown }
  | { readonly status: "error"; readonly error: string }
