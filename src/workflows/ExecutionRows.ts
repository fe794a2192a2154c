import type { ExecutionStatus, WorkflowEvent } from "./WorkflowSchemas.js"

/** Executions and events as the store keeps them, and the mapping from SQL rows. */

export interface Suspension {
  readonly suspendedAt: string
  readonly reason: string
  readonly stepIndex: number
  readonly stepId: string
  readonly data?: unknown
}

/** An execution as stored: the checkpoint is `stepIndex` (next step), `currentData` (its input) and `stepData`. */
export interface Execution {
  readonly id: string
  readonly workflowId: string
  readonly workflowName: string
  readonly status: ExecutionStatus
  readonly input: unknown
  readonly context: Record<string, unknown>
  readonly user: unknown
  /** The user the execution belongs to (under authentication; the body's userId without it), if any. */
  readonly userId?: string | undefined
  readonly stepIndex: number
  readonly stepData: Record<string, unknown>
  readonly currentData: unknown
  readonly output?: unknown
  readonly error?: string | undefined
  readonly suspension?: Suspension | undefined
  readonly resumeData?: unknown
  readonly metadata: { readonly traceId: string; readonly spanId: string }
  readonly version: number
  /** The instance whose fiber runs it (running executions only; none once released or settled). */
  readonly owner?: string | undefined
  /** The number of the execution's last event. */
  readonly lastSeq: number
  /** The hash of the definition it runs under (DefinitionCompatibility); none for rows from before 0016. */
  readonly definitionHash?: string | undefined
  readonly createdAt: string
  readonly updatedAt: string
  readonly endedAt?: string | undefined
}

export interface StoredEvent {
  readonly seq: number
  readonly event: WorkflowEvent
}

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

export interface Row {
  readonly id: string
  readonly workflow_id: string
  readonly workflow_name: string
  readonly status: ExecutionStatus
  readonly input: string
  readonly context: string
  readonly user_json: string | null
  readonly user_id: string | null
  readonly step_index: number
  readonly step_data: string
  readonly current_data: string | null
  readonly output: string | null
  readonly error: string | null
  readonly suspension: string | null
  readonly resume_data: string | null
  readonly metadata: string
  readonly version: number
  readonly owner: string | null
  readonly last_seq: number
  readonly definition_hash: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly ended_at: string | null
}

export const now = () => new Date().toISOString()

export const parse = (text: string | null): unknown => (text === null ? undefined : JSON.parse(text))
export const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))

export const fromRow = (row: Row): Execution => ({
  id: row.id,
  workflowId: row.workflow_id,
  workflowName: row.workflow_name,
  status: row.status,
  input: parse(row.input),
  context: parse(row.context) as Record<string, unknown>,
  user: parse(row.user_json) ?? null,
  userId: row.user_id ?? undefined,
  stepIndex: Number(row.step_index),
  stepData: parse(row.step_data) as Record<string, unknown>,
  currentData: parse(row.current_data),
  output: parse(row.output),
  error: row.error ?? undefined,
  suspension: parse(row.suspension) as Suspension | undefined,
  resumeData: parse(row.resume_data),
  metadata: parse(row.metadata) as Execution["metadata"],
  version: Number(row.version),
  owner: row.owner ?? undefined,
  lastSeq: Number(row.last_seq),
  definitionHash: row.definition_hash ?? undefined,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  endedAt: row.ended_at ?? undefined
})

/** What a listing shows of an execution (GET /workflows/executions): no checkpoint, no step data. */
export type ExecutionListing = Pick<
  Execution,
  "id" | "workflowId" | "workflowName" | "status" | "input" | "metadata" | "output" | "createdAt" | "updatedAt"
>

export type ListingRow = Pick<
  Row,
  "id" | "workflow_id" | "workflow_name" | "status" | "input" | "metadata" | "output" | "created_at" | "updated_at"
>

export const listingFromRow = (row: ListingRow): ExecutionListing => ({
  id: row.id,
  workflowId: row.workflow_id,
  workflowName: row.workflow_name,
  status: row.status,
  input: parse(row.input),
  metadata: parse(row.metadata) as Execution["metadata"],
  output: parse(row.output),
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

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

/** What the supervisor compares a fiber's claim with. */
export interface Holder {
  readonly id: string
  readonly status: ExecutionStatus
  readonly owner: string | undefined
  readonly version: number
  readonly lastSeq: number
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
