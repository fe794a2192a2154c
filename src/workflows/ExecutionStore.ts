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
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  endedAt: row.ended_at ?? undefined
})

const now = () => new Date().toISOString()

/**
 * The source of truth for executions. Transitions that race (resume, suspend, cancel) are conditional
 * updates: they report whether they won, so exactly one caller proceeds on every backend. A transition
 * and its event are written in one transaction, so a reader never sees one without the other.
 */
export class ExecutionStore extends Context.Tag("ExecutionStore")<ExecutionStore, {
  readonly create: (execution: Execution) => Effect.Effect<void>
  readonly get: (id: string) => Effect.Effect<Option.Option<Execution>>
  readonly exists: (id: string) => Effect.Effect<boolean>
  /** After a step, with its step-complete event: the next step, its input and the outputs so far. */
  readonly checkpoint: (
    id: string,
    checkpoint: { readonly stepIndex: number; readonly currentData: unknown; readonly stepData: Record<string, unknown> },
    event: WorkflowEvent
  ) => Effect.Effect<number>
  /** running → completed or error, with the event; none when it was not running any more. */
  readonly finish: (
    id: string,
    outcome: { readonly status: "completed" | "error"; readonly output?: unknown; readonly error?: string },
    event: WorkflowEvent
  ) => Effect.Effect<Option.Option<number>>
  /** running → suspended, with the event; none when it was not running any more. */
  readonly suspend: (id: string, suspension: Suspension, event: WorkflowEvent) => Effect.Effect<Option.Option<number>>
  /** suspended → running at `stepIndex` with `resumeData`, only from the version the caller read. */
  readonly claimResume: (
    execution: Execution,
    resume: { readonly stepIndex: number; readonly resumeData: unknown }
  ) => Effect.Effect<boolean>
  /** running or suspended → cancelled, with the event; none when it had already ended. */
  readonly cancel: (id: string, event: WorkflowEvent) => Effect.Effect<Option.Option<number>>
  readonly appendEvent: (id: string, event: WorkflowEvent) => Effect.Effect<number>
  readonly events: (id: string, afterSeq: number) => Effect.Effect<ReadonlyArray<StoredEvent>>
  readonly eventsOf: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<StoredEvent>>>
  readonly list: (query: ExecutionQuery) => Effect.Effect<ReadonlyArray<Execution>>
  /** Executions left running (for recovery after a restart). */
  readonly running: Effect.Effect<ReadonlyArray<Execution>>
}>() {}

export const ExecutionStoreLive = Layer.effect(
  ExecutionStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // One span per store operation; its SQL statements are not traced separately (they were half of
    // every workflow execution's spans and added nothing the operation's span does not say).
    const span = (name: string, id?: string) =>
      <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        effect.pipe(Effect.orDie, Effect.withTracerEnabled(false), Effect.withSpan(`ExecutionStore.${name}`, { captureStackTrace: false, attributes: id ? { "execution.id": id } : {} }))

    const create = (e: Execution) =>
      sql`INSERT INTO workflow_executions ${
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
          created_at: e.createdAt,
          updated_at: e.updatedAt,
          ended_at: null
        })
      }`.pipe(Effect.asVoid, span("create", e.id))

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

    // The next number is computed in the insert itself; the primary key turns a race into an error, never a duplicate.
    const insertEvent = (id: string, event: WorkflowEvent) =>
      sql<{ seq: number }>`INSERT INTO workflow_events (execution_id, seq, event, created_at)
        SELECT ${id}, COALESCE(MAX(seq), 0) + 1, ${JSON.stringify(event)}, ${event.timestamp}
        FROM workflow_events WHERE execution_id = ${id} RETURNING seq`.pipe(Effect.map((rows) => Number(rows[0].seq)))

    /** Runs a conditional update; when it changed the row, appends the event in the same transaction. */
    const transition = (id: string, update: Effect.Effect<ReadonlyArray<unknown>, unknown>, event: WorkflowEvent) =>
      sql.withTransaction(Effect.gen(function*() {
        const changed = yield* update
        return changed.length === 0 ? Option.none() : Option.some(yield* insertEvent(id, event))
      }))

    const checkpoint: ExecutionStore["Type"]["checkpoint"] = (id, c, event) =>
      sql.withTransaction(
        sql`UPDATE workflow_executions SET step_index = ${c.stepIndex}, current_data = ${json(c.currentData)},
          step_data = ${JSON.stringify(c.stepData)}, resume_data = NULL, updated_at = ${now()} WHERE id = ${id}`.pipe(
          Effect.zipRight(insertEvent(id, event))
        )
      ).pipe(span("checkpoint", id))

    const finish: ExecutionStore["Type"]["finish"] = (id, outcome, event) =>
      transition(
        id,
        sql`UPDATE workflow_executions SET status = ${outcome.status}, output = ${json(outcome.output)},
          error = ${outcome.error ?? null}, updated_at = ${event.timestamp}, ended_at = ${event.timestamp}
          WHERE id = ${id} AND status = 'running' RETURNING id`,
        event
      ).pipe(span("finish", id))

    const suspend = (id: string, suspension: Suspension, event: WorkflowEvent) =>
      transition(
        id,
        sql`UPDATE workflow_executions SET status = 'suspended', suspension = ${JSON.stringify(suspension)},
          step_index = ${suspension.stepIndex}, version = version + 1, updated_at = ${suspension.suspendedAt}
          WHERE id = ${id} AND status = 'running' RETURNING id`,
        event
      ).pipe(span("suspend", id))

    const claimResume: ExecutionStore["Type"]["claimResume"] = (execution, resume) =>
      sql`UPDATE workflow_executions SET status = 'running', step_index = ${resume.stepIndex},
        resume_data = ${json(resume.resumeData) ?? "null"}, version = version + 1, updated_at = ${now()}
        WHERE id = ${execution.id} AND status = 'suspended' AND version = ${execution.version} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        span("claimResume", execution.id)
      )

    const cancel = (id: string, event: WorkflowEvent) =>
      transition(
        id,
        sql`UPDATE workflow_executions SET status = 'cancelled', version = version + 1, updated_at = ${event.timestamp},
          ended_at = ${event.timestamp} WHERE id = ${id} AND status IN ('running', 'suspended') RETURNING id`,
        event
      ).pipe(span("cancel", id))

    const appendEvent = (id: string, event: WorkflowEvent) => insertEvent(id, event).pipe(span("appendEvent", id))
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

    const list = (query: ExecutionQuery) => {
      const filters = [
        ...(query.workflowId === undefined ? [] : [sql`workflow_id = ${query.workflowId}`]),
        ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
        ...(query.from === undefined ? [] : [sql`created_at > ${query.from}`]),
        ...(query.to === undefined ? [] : [sql`created_at < ${query.to}`])
      ]
      return sql<Row>`SELECT * FROM workflow_executions ${filters.length ? sql`WHERE ${sql.and(filters)}` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${query.limit} OFFSET ${query.offset}`.pipe(
        Effect.map((rows) => rows.map(fromRow)),
        span("list")
      )
    }

    const running = sql<Row>`SELECT * FROM workflow_executions WHERE status = 'running' ORDER BY created_at`.pipe(
      Effect.map((rows) => rows.map(fromRow)),
      span("running")
    )

    return ExecutionStore.of({
      create,
      get,
      exists,
      checkpoint,
      finish,
      suspend,
      claimResume,
      cancel,
      appendEvent,
      events,
      eventsOf,
      list,
      running
    })
  })
)
