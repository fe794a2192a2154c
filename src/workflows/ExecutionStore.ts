import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { ExecutionStatus, WorkflowEvent } from "./WorkflowSchemas.js"

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
  readonly stepIndex: number
  readonly stepData: Record<string, unknown>
  readonly currentData: unknown
  readonly output?: unknown
  readonly error?: string | undefined
  readonly suspension?: Suspension | undefined
  readonly resumeData?: unknown
  readonly metadata: { readonly traceId: string; readonly spanId: string }
  readonly version: number
  /** The number of the execution's last event. */
  readonly lastSeq: number
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
  readonly limit: number
  readonly offset: number
}

/** What a listing shows of an execution (GET /workflows/executions): no checkpoint, no step data. */
export type ExecutionListing = Pick<
  Execution,
  "id" | "workflowId" | "workflowName" | "status" | "input" | "metadata" | "output" | "createdAt" | "updatedAt"
>

type ListingRow = Pick<Row, "id" | "workflow_id" | "workflow_name" | "status" | "input" | "metadata" | "output" | "created_at" | "updated_at">

interface Row {
  readonly id: string
  readonly workflow_id: string
  readonly workflow_name: string
  readonly status: ExecutionStatus
  readonly input: string
  readonly context: string
  readonly user_json: string | null
  readonly step_index: number
  readonly step_data: string
  readonly current_data: string | null
  readonly output: string | null
  readonly error: string | null
  readonly suspension: string | null
  readonly resume_data: string | null
  readonly metadata: string
  readonly version: number
  readonly last_seq: number
  readonly created_at: string
  readonly updated_at: string
  readonly ended_at: string | null
}

const parse = (text: string | null): unknown => (text === null ? undefined : JSON.parse(text))
const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value))

const fromRow = (row: Row): Execution => ({
  id: row.id,
  workflowId: row.workflow_id,
  workflowName: row.workflow_name,
  status: row.status,
  input: parse(row.input),
  context: parse(row.context) as Record<string, unknown>,
  user: parse(row.user_json) ?? null,
  stepIndex: Number(row.step_index),
  stepData: parse(row.step_data) as Record<string, unknown>,
  currentData: parse(row.current_data),
  output: parse(row.output),
  error: row.error ?? undefined,
  suspension: parse(row.suspension) as Suspension | undefined,
  resumeData: parse(row.resume_data),
  metadata: parse(row.metadata) as Execution["metadata"],
  version: Number(row.version),
  lastSeq: Number(row.last_seq),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  endedAt: row.ended_at ?? undefined
})

const listingFromRow = (row: ListingRow): ExecutionListing => ({
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

const now = () => new Date().toISOString()

/**
 * A drive fiber's hold on an execution: its writes apply only while the row is `running` at this
 * version. Every transition from outside (suspend, resume, cancel) bumps the version, so a fiber that
 * has lost the execution has each of its writes refused and stops.
 */
export interface Claim {
  readonly id: string
  readonly version: number
}

/**
 * The source of truth for executions. Every write is conditional on the status (and, for a drive
 * fiber, the version) it expects and reports whether it applied, so exactly one of racing callers
 * proceeds on every backend. A write and its event are one transaction: the event's number comes from
 * the row's `last_seq`, bumped by the same UPDATE, so the row lock (Postgres) or the write lock (SQLite)
 * orders writers and numbers never collide.
 */
export class ExecutionStore extends Context.Tag("ExecutionStore")<ExecutionStore, {
  /** Inserts the execution with its first event (number 1); none when the id is taken. */
  readonly create: (execution: Execution, event: WorkflowEvent) => Effect.Effect<Option.Option<number>>
  readonly get: (id: string) => Effect.Effect<Option.Option<Execution>>
  readonly exists: (id: string) => Effect.Effect<boolean>
  /** Records that a step starts; none when the claim is lost (the step must not run). */
  readonly stepStarted: (claim: Claim, event: WorkflowEvent) => Effect.Effect<Option.Option<number>>
  /** After a step, with its step-complete event: the next step, its input and the outputs so far. */
  readonly checkpoint: (
    claim: Claim,
    checkpoint: { readonly stepIndex: number; readonly currentData: unknown; readonly stepData: Record<string, unknown> },
    event: WorkflowEvent
  ) => Effect.Effect<Option.Option<number>>
  /** running → completed or error, with the event. */
  readonly finish: (
    claim: Claim,
    outcome: { readonly status: "completed" | "error"; readonly output?: unknown; readonly error?: string },
    event: WorkflowEvent
  ) => Effect.Effect<Option.Option<number>>
  /**
   * running at `atStep` → suspended at `suspension.stepIndex`, with the event; the version moves on,
   * so the claim is spent. Gives the event's number.
   */
  readonly suspend: (
    claim: Claim & { readonly atStep: number },
    suspension: Suspension,
    event: WorkflowEvent
  ) => Effect.Effect<Option.Option<number>>
  /** suspended → running at `stepIndex` with `resumeData`, only from the version the caller read; the claimed row. */
  readonly claimResume: (
    execution: Execution,
    resume: { readonly stepIndex: number; readonly resumeData: unknown }
  ) => Effect.Effect<Option.Option<Execution>>
  /** running or suspended → cancelled, with the event; none when it had already ended. */
  readonly cancel: (id: string, event: WorkflowEvent) => Effect.Effect<Option.Option<number>>
  readonly events: (id: string, afterSeq: number) => Effect.Effect<ReadonlyArray<StoredEvent>>
  readonly eventsOf: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<StoredEvent>>>
  /** A page, newest first (created_at, then id, descending). */
  readonly list: (query: ExecutionQuery) => Effect.Effect<ReadonlyArray<ExecutionListing>>
  /** Executions left running (for recovery after a restart). */
  readonly running: Effect.Effect<ReadonlyArray<Execution>>
}>() {}

/**
 * The listing's statement. The page is found in a covering index (migration 0006), so a deep offset
 * skips index entries without reading rows; only the page's rows are then read, and only the columns
 * a listing shows.
 */
export const listingQuery = (sql: SqlClient.SqlClient, query: ExecutionQuery) => {
  const filters = [
    ...(query.workflowId === undefined ? [] : [sql`workflow_id = ${query.workflowId}`]),
    ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
    ...(query.from === undefined ? [] : [sql`created_at > ${query.from}`]),
    ...(query.to === undefined ? [] : [sql`created_at < ${query.to}`])
  ]
  return sql<ListingRow>`SELECT id, workflow_id, workflow_name, status, input, metadata, output, created_at, updated_at
    FROM workflow_executions WHERE id IN (
      SELECT id FROM workflow_executions ${filters.length ? sql`WHERE ${sql.and(filters)}` : sql``}
      ORDER BY created_at DESC, id DESC LIMIT ${query.limit} OFFSET ${query.offset}
    ) ORDER BY created_at DESC, id DESC`
}

export const ExecutionStoreLive = Layer.effect(
  ExecutionStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // One span per store operation; its SQL statements are not traced separately (they were half of
    // every workflow execution's spans and added nothing the operation's span does not say).
    const span = (name: string, id?: string) =>
      <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        effect.pipe(Effect.orDie, Effect.withTracerEnabled(false), Effect.withSpan(`ExecutionStore.${name}`, { captureStackTrace: false, attributes: id ? { "execution.id": id } : {} }))

    const insertEvent = (id: string, seq: number, event: WorkflowEvent) =>
      sql`INSERT INTO workflow_events ${
        sql.insert({ execution_id: id, seq, event: JSON.stringify(event), created_at: event.timestamp })
      }`.pipe(Effect.as(seq))

    /**
     * Runs a conditional UPDATE that bumps `last_seq` and returns it; when it changed the row, appends
     * the event with that number in the same transaction.
     */
    const transition = (id: string, update: Effect.Effect<ReadonlyArray<{ readonly last_seq: number }>, unknown>, event: WorkflowEvent) =>
      sql.withTransaction(Effect.gen(function*() {
        const changed = yield* update
        return changed.length === 0 ? Option.none() : Option.some(yield* insertEvent(id, Number(changed[0].last_seq), event))
      }))

    /** The rows a drive fiber may still write: running, at the version it holds. */
    const held = (claim: Claim) => sql`id = ${claim.id} AND status = 'running' AND version = ${claim.version}`

    const create = (e: Execution, event: WorkflowEvent) =>
      sql.withTransaction(Effect.gen(function*() {
        const inserted = yield* sql<{ id: string }>`INSERT INTO workflow_executions ${
          sql.insert({
            id: e.id,
            workflow_id: e.workflowId,
            workflow_name: e.workflowName,
            status: e.status,
            input: JSON.stringify(e.input),
            context: JSON.stringify(e.context),
            user_json: json(e.user),
            step_index: e.stepIndex,
            step_data: JSON.stringify(e.stepData),
            current_data: json(e.currentData),
            output: null,
            error: null,
            suspension: null,
            resume_data: null,
            metadata: JSON.stringify(e.metadata),
            version: e.version,
            last_seq: 1,
            created_at: e.createdAt,
            updated_at: e.updatedAt,
            ended_at: null
          })
        } ON CONFLICT (id) DO NOTHING RETURNING id`
        return inserted.length === 0 ? Option.none() : Option.some(yield* insertEvent(e.id, 1, event))
      })).pipe(span("create", e.id))

    const get = (id: string) =>
      sql<Row>`SELECT * FROM workflow_executions WHERE id = ${id}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), fromRow)),
        span("get", id)
      )

    const exists = (id: string) =>
      sql<{ id: string }>`SELECT id FROM workflow_executions WHERE id = ${id}`.pipe(
        Effect.map((rows) => rows.length > 0),
        span("exists", id)
      )

    const stepStarted: ExecutionStore["Type"]["stepStarted"] = (claim, event) =>
      transition(
        claim.id,
        sql`UPDATE workflow_executions SET last_seq = last_seq + 1, updated_at = ${event.timestamp}
          WHERE ${held(claim)} RETURNING last_seq`,
        event
      ).pipe(span("stepStarted", claim.id))

    const checkpoint: ExecutionStore["Type"]["checkpoint"] = (claim, c, event) =>
      transition(
        claim.id,
        sql`UPDATE workflow_executions SET step_index = ${c.stepIndex}, current_data = ${json(c.currentData)},
          step_data = ${JSON.stringify(c.stepData)}, resume_data = NULL, last_seq = last_seq + 1, updated_at = ${now()}
          WHERE ${held(claim)} RETURNING last_seq`,
        event
      ).pipe(span("checkpoint", claim.id))

    const finish: ExecutionStore["Type"]["finish"] = (claim, outcome, event) =>
      transition(
        claim.id,
        sql`UPDATE workflow_executions SET status = ${outcome.status}, output = ${json(outcome.output)},
          error = ${outcome.error ?? null}, last_seq = last_seq + 1, updated_at = ${event.timestamp}, ended_at = ${event.timestamp}
          WHERE ${held(claim)} RETURNING last_seq`,
        event
      ).pipe(span("finish", claim.id))

    const suspend: ExecutionStore["Type"]["suspend"] = (claim, suspension, event) =>
      transition(
        claim.id,
        sql`UPDATE workflow_executions SET status = 'suspended', suspension = ${JSON.stringify(suspension)},
          step_index = ${suspension.stepIndex}, version = version + 1, last_seq = last_seq + 1, updated_at = ${suspension.suspendedAt}
          WHERE ${held(claim)} AND step_index = ${claim.atStep} RETURNING last_seq`,
        event
      ).pipe(span("suspend", claim.id))

    const claimResume: ExecutionStore["Type"]["claimResume"] = (execution, resume) =>
      sql<Row>`UPDATE workflow_executions SET status = 'running', step_index = ${resume.stepIndex},
        resume_data = ${json(resume.resumeData) ?? "null"}, version = version + 1, updated_at = ${now()}
        WHERE id = ${execution.id} AND status = 'suspended' AND version = ${execution.version} RETURNING *`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), fromRow)),
        span("claimResume", execution.id)
      )

    const cancel = (id: string, event: WorkflowEvent) =>
      transition(
        id,
        sql`UPDATE workflow_executions SET status = 'cancelled', version = version + 1, last_seq = last_seq + 1,
          updated_at = ${event.timestamp}, ended_at = ${event.timestamp}
          WHERE id = ${id} AND status IN ('running', 'suspended') RETURNING last_seq`,
        event
      ).pipe(span("cancel", id))

    const toStored = (row: { seq: number; event: string }): StoredEvent => ({
      seq: Number(row.seq),
      event: JSON.parse(row.event)
    })

    const events = (id: string, afterSeq: number) =>
      sql<{ seq: number; event: string }>`SELECT seq, event FROM workflow_events
        WHERE execution_id = ${id} AND seq > ${afterSeq} ORDER BY seq`.pipe(
        Effect.map((rows) => rows.map(toStored)),
        span("events", id)
      )

    type EventRow = { readonly execution_id: string; readonly seq: number; readonly event: string }
    const eventsOf = (ids: ReadonlyArray<string>) =>
      (ids.length === 0
        ? Effect.succeed<ReadonlyArray<EventRow>>([])
        : sql<EventRow>`SELECT execution_id, seq, event FROM workflow_events
          WHERE ${sql.in("execution_id", ids)} ORDER BY execution_id, seq`.pipe(Effect.map((rows): ReadonlyArray<EventRow> => rows))).pipe(
          Effect.map((rows) => {
            const byId = new Map<string, Array<StoredEvent>>()
            for (const row of rows) {
              const list = byId.get(row.execution_id) ?? []
              list.push(toStored(row))
              byId.set(row.execution_id, list)
            }
            return byId as ReadonlyMap<string, ReadonlyArray<StoredEvent>>
          }),
          span("eventsOf")
        )

    const list = (query: ExecutionQuery) =>
      listingQuery(sql, query).pipe(
        Effect.map((rows) => rows.map(listingFromRow)),
        span("list")
      )

    const running = sql<Row>`SELECT * FROM workflow_executions WHERE status = 'running' ORDER BY created_at`.pipe(
      Effect.map((rows) => rows.map(fromRow)),
      span("running")
    )

    return ExecutionStore.of({
      create,
      get,
      exists,
      stepStarted,
      checkpoint,
      finish,
      suspend,
      claimResume,
      cancel,
      events,
      eventsOf,
      list,
      running
    })
  })
)
