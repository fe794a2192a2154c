import { SqlClient, type Statement } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { column, NumberColumn, optionalColumn } from "../../storage/ColumnSchemas.js"
import { runRequestOn } from "../../storage/commits.js"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import { insertExecution } from "../execution/ExecutionInsert.js"
import type { Execution } from "../execution/ExecutionRows.js"
import { writeWithEvents } from "../execution/ValueRows.js"

export const CatchUpSchema = Schema.Literal("none", "latest", "all")

/** A schedule as stored (times are ISO text, as `wake_at` is). */
export const ScheduleFromRow = Schema.Struct({
  id: Schema.String,
  workflowId: column(Schema.String, "workflow_id"),
  name: Schema.String,
  source: Schema.Literal("code", "api"),
  ownerKey: column(Schema.String, "owner_key"),
  userId: column(Schema.NullOr(Schema.String), "user_id"),
  cron: Schema.String,
  timezone: Schema.NullOr(Schema.String),
  input: Schema.parseJson(),
  catchUp: column(CatchUpSchema, "catch_up"),
  paused: Schema.transform(NumberColumn, Schema.Boolean, {
    strict: true,
    decode: (n) => n !== 0,
    encode: (b) => (b ? 1 : 0)
  }),
  nextFireAt: column(Schema.String, "next_fire_at"),
  lastFiredAt: column(Schema.NullOr(Schema.String), "last_fired_at"),
  lastExecutionId: column(Schema.NullOr(Schema.String), "last_execution_id"),
  failures: NumberColumn,
  lastError: column(Schema.NullOr(Schema.String), "last_error"),
  createdAt: column(Schema.String, "created_at"),
  updatedAt: column(Schema.String, "updated_at"),
  /** Each of its executions' completion callback (issue #33, migration 0029), if it has one. */
  webhookUrl: optionalColumn(Schema.String, "webhook_url")
})
export type Schedule = typeof ScheduleFromRow.Type

const decodeRows = Schema.decodeUnknown(Schema.Array(ScheduleFromRow))

/** A schedule as lists read it (issue #42): every column but `input`, which only the one schedule's route returns. */
export const ScheduleSummaryFromRow = ScheduleFromRow.omit("input")
export type ScheduleSummaryRow = typeof ScheduleSummaryFromRow.Type

const decodeSummaries = Schema.decodeUnknown(Schema.Array(ScheduleSummaryFromRow))
/** A failed firing's message can quote the input it refused: a list shows its first characters. */
export const LISTED_ERROR_CHARS = 1000
const SUMMARY_COLUMNS =
  `id, workflow_id, name, source, owner_key, user_id, cron, timezone, catch_up, paused, next_fire_at,
  last_fired_at, last_execution_id, failures, created_at, updated_at, webhook_url,
  CASE WHEN LENGTH(last_error) > ${LISTED_ERROR_CHARS} THEN SUBSTR(last_error, 1, ${LISTED_ERROR_CHARS}) || '…' ELSE last_error END AS last_error`

/** A page of a list: how many from where (`pageOf` in http/Query.ts fills in the defaults). */
export interface Page {
  readonly limit: number
  readonly offset: number
}

/** Failed firings in a row after which a schedule pauses itself. */
export const FAILURES_BEFORE_PAUSE = 5

/** Which schedules an instance fires: the API's of the workflows it serves, and the code schedules it has. */
export interface Fired {
  readonly workflowIds: ReadonlyArray<string>
  readonly codeIds: ReadonlyArray<string>
}

/** A firing's conditional write: the schedule moved from `due` to `next`, with the execution it starts. */
export interface Firing {
  readonly id: string
  readonly due: string
  readonly next: string
  readonly at: string
}

export class ScheduleStore extends Context.Tag("ScheduleStore")<ScheduleStore, {
  /** One page of the schedules `filter` selects, by (workflow, name, id), without their inputs (and `lastError` cut). */
  readonly list: (
    filter: { readonly workflowId?: string | undefined; readonly userId?: string | null | undefined },
    page: Page
  ) => Effect.Effect<ReadonlyArray<ScheduleSummaryRow>>
  readonly get: (id: string) => Effect.Effect<Option.Option<Schedule>>
  /**
   * A new schedule, written only while its owner has fewer than `maxOwned` API schedules (one statement,
   * serialised per owner on Postgres): `taken` when its (workflow, owner, name) is, `full` at the bound.
   */
  readonly insert: (schedule: Schedule, maxOwned: number) => Effect.Effect<"inserted" | "taken" | "full">
  /** A code schedule written at start-up: its due time kept unless its cron or time zone changed. */
  readonly upsertCode: (schedule: Schedule) => Effect.Effect<void>
  /** Paused or resumed (resumed: due next at `next`, its failures forgotten); none when it already was. */
  readonly setPaused: (id: string, paused: boolean, next: string) => Effect.Effect<Option.Option<Schedule>>
  /** A schedule of `source` deleted; false when gone. */
  readonly remove: (id: string, source: Schedule["source"]) => Effect.Effect<boolean>
  readonly nextDue: (fired: Fired) => Effect.Effect<Option.Option<number>>
  readonly due: (fired: Fired, now: string, limit: number) => Effect.Effect<ReadonlyArray<Schedule>>
  /**
   * One transaction: `UPDATE ... SET next_fire_at = next WHERE id AND next_fire_at = due AND paused = 0`
   * and, when it changed the row, the execution with its opening events. The events' last number, or
   * none when another firing (or a pause) came first.
   */
  readonly fire: (
    firing: Firing,
    execution: Execution,
    events: ReadonlyArray<WorkflowEvent>
  ) => Effect.Effect<Option.Option<number>>
  /** The due time moved on without an execution (a missed time skipped, or a failure recorded); false when another came first. */
  readonly skip: (firing: Omit<Firing, "at">, failure?: string) => Effect.Effect<boolean>
}>() {}

export const makeScheduleStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const untraced = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(Effect.orDie, Effect.withTracerEnabled(false))
  const read = (statement: Statement.Statement<Record<string, unknown>>) =>
    untraced(Effect.flatMap(statement, decodeRows))

  const firedBy = (fired: Fired) => {
    const api = fired.workflowIds.length === 0
      ? sql`FALSE`
      : sql`(source = 'api' AND ${sql.in("workflow_id", fired.workflowIds)})`
    const code = fired.codeIds.length === 0 ? sql`FALSE` : sql.in("id", fired.codeIds)
    return sql`paused = 0 AND (${api} OR ${code})`
  }

  const row = (s: Schedule) => ({
    id: s.id,
    workflow_id: s.workflowId,
    name: s.name,
    source: s.source,
    owner_key: s.ownerKey,
    user_id: s.userId,
    cron: s.cron,
    timezone: s.timezone,
    input: JSON.stringify(s.input),
    catch_up: s.catchUp,
    paused: s.paused ? 1 : 0,
    next_fire_at: s.nextFireAt,
    last_fired_at: s.lastFiredAt,
    last_execution_id: s.lastExecutionId,
    failures: s.failures,
    last_error: s.lastError,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    webhook_url: s.webhookUrl ?? null
  })

  return ScheduleStore.of({
    list: (filter, page) => {
      const where = [
        ...(filter.workflowId === undefined ? [] : [sql`workflow_id = ${filter.workflowId}`]),
        ...(filter.userId === undefined
          ? []
          : [filter.userId === null ? sql`user_id IS NULL` : sql`user_id = ${filter.userId}`])
      ]
      return untraced(Effect.flatMap(
        sql`SELECT ${sql.literal(SUMMARY_COLUMNS)} FROM workflow_schedules ${
          where.length ? sql`WHERE ${sql.and(where)}` : sql``
        }
          ORDER BY workflow_id, name, id LIMIT ${page.limit} OFFSET ${page.offset}`,
        decodeSummaries
      ))
    },
    get: (id) =>
      Effect.map(read(sql`SELECT * FROM workflow_schedules WHERE id = ${id}`), (rows) => Option.fromNullable(rows[0])),
    insert: (schedule, maxOwned) => {
      const values = row(schedule)
      const columns = Object.keys(values)
      const lockOwner = sql.onDialectOrElse({
        // READ COMMITTED lets two inserts count the same rows: one owner's inserts take turns instead.
        pg: () =>
          Effect.asVoid(sql`SELECT pg_advisory_xact_lock(hashtext(${"workflow_schedules:" + schedule.ownerKey}))`),
        // SQLite has one writer: the INSERT ... SELECT below counts and writes in one step.
        orElse: () => Effect.void
      })
      return untraced(sql.withTransaction(Effect.gen(function*() {
        yield* lockOwner
        const inserted = yield* sql`INSERT INTO workflow_schedules (${sql.literal(columns.join(", "))})
          SELECT ${sql.csv(columns.map((name) => sql`${values[name as keyof typeof values]}`))}
          WHERE (SELECT COUNT(*) FROM workflow_schedules WHERE owner_key = ${schedule.ownerKey} AND source = 'api') < ${maxOwned}
          ON CONFLICT DO NOTHING RETURNING id`
        if (inserted.length === 1) return "inserted" as const
        const named = yield* sql`SELECT id FROM workflow_schedules
          WHERE workflow_id = ${schedule.workflowId} AND owner_key = ${schedule.ownerKey} AND name = ${schedule.name}`
        return named.length > 0 ? "taken" as const : "full" as const
      })))
    },
    upsertCode: (s) =>
      untraced(sql`INSERT INTO workflow_schedules ${sql.insert(row(s))} ON CONFLICT (id) DO UPDATE SET
        cron = excluded.cron, timezone = excluded.timezone, input = excluded.input, catch_up = excluded.catch_up, webhook_url = excluded.webhook_url,
        next_fire_at = CASE WHEN workflow_schedules.cron = excluded.cron
          AND COALESCE(workflow_schedules.timezone, '') = COALESCE(excluded.timezone, '')
          THEN workflow_schedules.next_fire_at ELSE excluded.next_fire_at END,
        updated_at = excluded.updated_at`.pipe(Effect.asVoid)),
    setPaused: (id, paused, next) =>
      Effect.map(
        read(
          paused
            ? sql`UPDATE workflow_schedules SET paused = 1, updated_at = ${
              new Date().toISOString()
            } WHERE id = ${id} AND paused = 0 RETURNING *`
            : sql`UPDATE workflow_schedules SET paused = 0, failures = 0, next_fire_at = ${next}, updated_at = ${
              new Date().toISOString()
            }
              WHERE id = ${id} AND paused = 1 RETURNING *`
        ),
        (rows) => Option.fromNullable(rows[0])
      ),
    remove: (id, source) =>
      untraced(
        Effect.map(sql`DELETE FROM workflow_schedules WHERE id = ${id} AND source = ${source} RETURNING id`, (rows) =>
          rows.length === 1)
      ),
    nextDue: (fired) =>
      untraced(Effect.map(
        sql<{ next: string | null }>`SELECT MIN(next_fire_at) AS next FROM workflow_schedules WHERE ${firedBy(fired)}`,
        (rows) => {
          const next = rows.at(0)?.next
          return next == null ? Option.none() : Option.some(Date.parse(next))
        }
      )),
    due: (fired, now, limit) =>
      read(
        sql`SELECT * FROM workflow_schedules WHERE ${
          firedBy(fired)
        } AND next_fire_at <= ${now} ORDER BY next_fire_at LIMIT ${limit}`
      ),
    fire: (firing, execution, events) =>
      untraced(sql.withTransaction(Effect.gen(function*() {
        const moved =
          yield* sql`UPDATE workflow_schedules SET next_fire_at = ${firing.next}, last_fired_at = ${firing.at},
          last_execution_id = ${execution.id}, failures = 0, last_error = NULL, updated_at = ${execution.createdAt}
          WHERE id = ${firing.id} AND next_fire_at = ${firing.due} AND paused = 0 RETURNING id`
        if (moved.length === 0) return Option.none<number>()
        return yield* writeWithEvents(
          runRequestOn(sql),
          execution.id,
          events,
          (staging) => [insertExecution(sql, staging, execution, events.length)]
        )
      }))),
    skip: (firing, failure) =>
      untraced(Effect.map(
        failure === undefined
          ? sql`UPDATE workflow_schedules SET next_fire_at = ${firing.next}
              WHERE id = ${firing.id} AND next_fire_at = ${firing.due} AND paused = 0 RETURNING id`
          : sql`UPDATE workflow_schedules SET next_fire_at = ${firing.next}, failures = failures + 1, last_error = ${failure},
              paused = CASE WHEN failures + 1 >= ${FAILURES_BEFORE_PAUSE} THEN 1 ELSE 0 END, updated_at = ${
            new Date().toISOString()
          }
              WHERE id = ${firing.id} AND next_fire_at = ${firing.due} AND paused = 0 RETURNING id`,
        (rows) => rows.length === 1
      ))
  })
})

export const ScheduleStoreLive = Layer.effect(ScheduleStore, makeScheduleStore)

/** The layer's store, or one on the service's client (an engine built without the layer). */
export const scheduleStoreOrOwn = Effect.flatMap(
  Effect.serviceOption(ScheduleStore),
  Option.match({ onSome: Effect.succeed, onNone: () => makeScheduleStore })
)
