import { Option, Predicate, Schema } from "effect"
import { ErrorDetail } from "../../core/errorDetail.js"
import { column, NumberColumn, optionalColumn, optionalJson } from "../../storage/ColumnSchemas.js"
import { ExecutionMetadata, ExecutionStatus, type WorkflowEvent, WorkflowEventType } from "../api/WorkflowSchemas.js"

/** Executions and events as the store keeps them, decoded from their SQL rows. */

/** A stored value the store has already read back whole (its text referred to stored values: StoredValues). */
export class Resolved {
  constructor(readonly value: unknown) {}
}

/** A JSON column: its text, or the value the store resolved it to. */
const Json = Schema.Union(
  Schema.parseJson(),
  Schema.transform(Schema.instanceOf(Resolved), Schema.Unknown, {
    strict: true,
    decode: (resolved) => resolved.value,
    encode: (value) => new Resolved(value)
  })
)
const JsonRecord = Schema.compose(Json, Schema.Record({ key: Schema.String, value: Schema.Unknown }), { strict: false })
const NullableStoredJson = Schema.Union(
  Schema.Null.pipe(Schema.transform(Schema.Undefined, {
    strict: true,
    decode: () => undefined,
    encode: () => null
  })),
  Json
)
const optionalStoredJson = Schema.optionalToOptional(NullableStoredJson, Schema.Unknown, {
  decode: Option.filter((value) => value !== undefined),
  encode: (value) => value
})

/** The columns of an execution's row that may refer to stored values. */
export const VALUE_COLUMNS = ["input", "step_data", "current_data", "output"] as const

export const Suspension = Schema.Struct({
  suspendedAt: Schema.String,
  reason: Schema.String,
  stepIndex: Schema.Number,
  stepId: Schema.String,
  data: Schema.optional(Schema.Unknown),
  /** When it ends by itself: its approvals expire (steps/ApprovalExpiry.ts); stored as `wake_at` too. */
  wakeAt: Schema.optional(Schema.String)
})
export interface Suspension extends Schema.Schema.Type<typeof Suspension> {}

/**
 * The status column: `sleeping` (a parked timer, migration 0020) and `queued` (waiting for a concurrency
 * slot, migration 0030) are `running` to everyone but the services whose statements name them;
 * `wakeAt` tells a parked one, `queuedAt` a queued one.
 */
const RowStatus = Schema.transform(Schema.Literal(...ExecutionStatus.literals, "sleeping", "queued"), ExecutionStatus, {
  strict: true,
  decode: (status) => (status === "sleeping" || status === "queued" ? "running" : status),
  encode: (status) => status
})

/** The committed wake time of the sleep step an execution stands at (issue #31). */
/** The sleep an execution is parked at: its top-level step, the sleep's path inside it (a child's sleep), its wake time. */
export const SleepRecord = Schema.Struct({
  stepId: Schema.String,
  wakeAt: Schema.String,
  path: Schema.optional(Schema.String)
})
export interface SleepRecord extends Schema.Schema.Type<typeof SleepRecord> {}

/**
 * An execution as stored, from its row (`SELECT *`): the checkpoint is `stepIndex` (next step),
 * `currentData` (its input) and `stepData`. Its values (input, currentData, stepData, resumeData, the
 * suspension's data) are in their stored form: encoded by their schemas (StepCodec decodes them).
 */
export const ExecutionFromRow = Schema.Struct({
  id: Schema.String,
  workflowId: column(Schema.String, "workflow_id"),
  workflowName: column(Schema.String, "workflow_name"),
  status: RowStatus,
  input: Json,
  context: JsonRecord,
  user: column(Schema.NullOr(Json), "user_json"),
  /** The user the execution belongs to (under authentication; the body's userId without it), if any. */
  userId: optionalColumn(Schema.String, "user_id"),
  stepIndex: column(NumberColumn, "step_index"),
  stepData: column(JsonRecord, "step_data"),
  currentData: column(NullableStoredJson, "current_data"),
  output: optionalStoredJson,
  error: Schema.optionalWith(Schema.String, { nullable: true }),
  /** The error's tag, message and fields (issue #30); none for rows from before 0019 or errors without one. */
  errorDetail: optionalColumn(Schema.parseJson(ErrorDetail), "error_detail"),
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
  endedAt: optionalColumn(Schema.String, "ended_at"),
  /** The size of its events as JSON (what a reader of them receives); 0 for rows from before 0018 with no events. */
  historyBytes: optionalColumn(NumberColumn, "history_bytes"),
  /** A retry under way at the current step (0022; see steps/RetryState.ts): the attempt it is at, and which step. */
  stepAttempt: optionalColumn(NumberColumn, "step_attempt"),
  stepAttemptKey: optionalColumn(Schema.String, "step_attempt_key"),
  stepFirstAttemptAt: optionalColumn(Schema.String, "step_first_attempt_at"),
  stepRetryAt: optionalColumn(Schema.String, "step_retry_at"),
  stepRetryErrors: optionalColumn(Schema.String, "step_retry_errors"),
  /** While parked by a sleep step (status `sleeping`): when it wakes (ISO). */
  wakeAt: optionalColumn(Schema.String, "wake_at"),
  /** The wake time committed by the sleep step it stands at, if any. */
  sleep: Schema.optionalWith(Schema.parseJson(SleepRecord), { nullable: true }),
  /** A replay (issue #33, migration 0027): the execution it replays and the step it ran from. */
  replayOf: optionalColumn(Schema.String, "replay_of"),
  replayFrom: optionalColumn(Schema.String, "replay_from"),
  /** A limited workflow's execution (issue #33, 0030): its stored key, and while queued (status `queued`) since when. */
  concurrencyKey: optionalColumn(Schema.String, "concurrency_key"),
  queuedAt: optionalColumn(Schema.String, "queued_at"),
  /** How a queued one is launched once admitted: none for a fresh start, `resume` or `wake` (`-checked`): concurrency/. */
  queuedFrom: optionalColumn(Schema.String, "queued_from"),
  /** Where its completion callback goes (issue #33, migration 0029), if it has one. */
  webhookUrl: optionalColumn(Schema.String, "webhook_url")
})
export interface Execution extends Schema.Schema.Type<typeof ExecutionFromRow> {}

/**
 * What a listing shows of an execution (GET /workflows/executions): no checkpoint, no step data; no
 * input or output either when its history is over what a listing shows whole (see listingQuery).
 */
export const ExecutionListingFromRow = Schema.Struct({
  ...ExecutionFromRow.pick(
    "id",
    "workflowId",
    "workflowName",
    "status",
    "metadata",
    "output",
    "createdAt",
    "updatedAt",
    "historyBytes",
    "wakeAt",
    "replayOf",
    "replayFrom",
    "queuedAt"
  ).fields,
  input: optionalStoredJson
})
export interface ExecutionListing extends Schema.Schema.Type<typeof ExecutionListingFromRow> {}

/** A replay of an execution, as the original's record lists it. */
export const ReplayFromRow = Schema.Struct({
  replayOf: column(Schema.String, "replay_of"),
  executionId: column(Schema.String, "id"),
  fromStep: column(Schema.String, "replay_from"),
  createdAt: column(Schema.String, "created_at")
})
export interface Replay extends Schema.Schema.Type<typeof ReplayFromRow> {}

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

export const StoredEventFromRow = Schema.Struct({
  seq: NumberColumn,
  event: Schema.compose(Json, StoredWorkflowEvent, { strict: false })
})
export interface StoredEvent extends Schema.Schema.Type<typeof StoredEventFromRow> {}

export interface ExecutionQuery {
  readonly workflowId?: string | undefined
  readonly status?: ExecutionStatus | undefined
  /** Only running executions waiting for a concurrency slot (issue #33). */
  readonly waiting?: "concurrency" | undefined
  readonly from?: string | undefined
  readonly to?: string | undefined
  /** Only executions of this user (null: those without one); everyone's when absent. */
  readonly userId?: string | null | undefined
  readonly limit: number
  readonly offset: number
  /** Records whose history is over this many bytes come without input and output (summaries); all whole when absent. */
  readonly wholeBytes?: number | undefined
}

export const now = () => new Date().toISOString()

export const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))

/** How a claimed execution's fiber starts (ExecutionDriver's `launch`). */
export interface LaunchOptions {
  /** Its first step's step-start is stored already (the opening write, or a woken sleeper's park). */
  readonly startRecorded: boolean
  readonly deaths?: number
  readonly checked?: boolean
  readonly woken?: boolean
  /** Taken over from an instance that is gone (the concurrency gate checks its key's limit again). */
  readonly recovered?: boolean
}

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
  /** Whether the execution has a completion callback (issue #33); unknown (undefined): its ending checks the row. */
  readonly webhook?: boolean | undefined
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
  | { readonly status: "error"; readonly error: string; readonly errorDetail?: ErrorDetail | undefined }
