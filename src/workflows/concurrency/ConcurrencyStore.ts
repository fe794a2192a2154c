import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { column, NumberColumn } from "../../storage/ColumnSchemas.js"
import { runRequestOn } from "../../storage/commits.js"
import { storeCommitsOrInline } from "../../storage/StoreCommits.js"
import { ownTransaction } from "../../storage/transaction.js"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import { executionRow } from "../execution/ExecutionInsert.js"
import { type Execution, ExecutionFromRow, now, VALUE_COLUMNS } from "../execution/ExecutionRows.js"
import { retryingRead } from "../execution/storeRetry.js"
import { resolveRows, writeWithEvents } from "../execution/ValueRows.js"

/** Keys admitted per sweep at most (the others wait for the next one). */
const SWEEP_KEYS = 500

const QueuedKey = Schema.Struct({
  key: column(Schema.String, "concurrency_key"),
  workflowId: column(Schema.String, "workflow_id")
})
const Depth = Schema.Struct({ workflowId: column(Schema.String, "workflow_id"), queued: NumberColumn })
const Count = Schema.Struct({ n: NumberColumn })

/**
 * The slots of concurrency keys (issue #33), with the store as the truth: a key's slots in use are its
 * rows in `status = 'running'`, counted (a running row of a dead instance keeps its slot until its
 * orphan claim runs it to an end: nothing to reconcile after a crash). A claimer first updates the
 * key's row in `workflow_concurrency` in its own transaction: that write takes the row lock (Postgres)
 * or the write lock (SQLite), so the claimers of one key take turns and each counts what the previous
 * one promoted; queued rows are then promoted oldest first by a conditional update
 * (`status 'queued' → 'running'`, so a concurrent cancel wins or loses cleanly).
 */
export const makeConcurrencyStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const submit = yield* storeCommitsOrInline
  // A store failure (a connection reset) is tried again: each statement or transaction here is
  // conditional, so running it again after a failure changes nothing it should not.
  const retried = <A, E>(effect: Effect.Effect<A, E>) =>
    retryingRead(effect.pipe(Effect.orDie, Effect.withTracerEnabled(false)))
  const decodeExecutions = Schema.decodeUnknown(Schema.Array(ExecutionFromRow))
  const decodeKeys = Schema.decodeUnknown(Schema.Array(QueuedKey))
  const decodeDepths = Schema.decodeUnknown(Schema.Array(Depth))
  const decodeCount = Schema.decodeUnknown(Schema.Array(Count))

  /**
   * The key's row written (inserted, or its counter bumped) in one statement, so the row lock is always
   * taken, even when the row was just deleted by `forgetIdle` (Postgres retries an upsert that meets a
   * concurrent delete; on SQLite the write lock is held already).
   */
  const lockKey = (key: string, workflowId: string) =>
    sql`INSERT INTO workflow_concurrency (key, workflow_id, admissions) VALUES (${key}, ${workflowId}, 1)
      ON CONFLICT (key) DO UPDATE SET admissions = workflow_concurrency.admissions + 1`

  const runningCount = (key: string) =>
    Effect.map(
      Effect.flatMap(
        sql`SELECT COUNT(*) AS n FROM workflow_executions WHERE concurrency_key = ${key} AND status = 'running'`,
        decodeCount
      ),
      (rows) => rows[0]?.n ?? 0
    )

  /**
   * Promotes the oldest queued executions of `key` into its free slots (at most `limit` running),
   * owned by `owner` at a new version: the executions to launch.
   */
  const admit = (
    key: string,
    workflowId: string,
    limit: number,
    owner: string
  ): Effect.Effect<ReadonlyArray<Execution>> =>
    ownTransaction(sql, "workflow_concurrency")(Effect.gen(function*() {
      yield* lockKey(key, workflowId)
      const free = limit - (yield* runningCount(key))
      if (free <= 0) return []
      const rows = yield* sql<Record<string, unknown>>`UPDATE workflow_executions
        SET status = 'running', owner = ${owner}, queued_at = NULL, version = version + 1, updated_at = ${now()}
        WHERE id IN (
          SELECT id FROM workflow_executions WHERE concurrency_key = ${key} AND status = 'queued'
          ORDER BY created_at, id LIMIT ${free}
        ) AND status = 'queued' RETURNING *`
      const resolved = yield* resolveRows(sql, rows, VALUE_COLUMNS, (row) => String(row.id))
      // RETURNING gives no order: launched oldest first.
      return [...(yield* decodeExecutions(resolved))].sort((a, b) =>
        a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1
      )
    })).pipe(retried)

  /**
   * A resumed or woken execution (running, held at `version`) queued again when its key is over its
   * limit with it: true when it was (then it waits for a slot like a new start).
   */
  const requeue = (
    key: string,
    workflowId: string,
    limit: number,
    held: { readonly id: string; readonly version: number },
    from: string
  ) =>
    ownTransaction(sql, "workflow_concurrency")(Effect.gen(function*() {
      yield* lockKey(key, workflowId)
      if ((yield* runningCount(key)) <= limit) return false
      const at = now()
      const rows = yield* sql<
        { id: string }
      >`UPDATE workflow_executions SET status = 'queued', owner = NULL, queued_at = ${at},
        queued_from = ${from}, version = version + 1, updated_at = ${at}
        WHERE id = ${held.id} AND status = 'running' AND version = ${held.version} RETURNING id`
      return rows.length > 0
    })).pipe(retried)

  /** The rows of one owner (`userId`): under `scope: 'global'` one key holds many owners' rows. */
  const sameOwner = (
    userId: string | undefined
  ) => (userId === undefined ? sql`user_id IS NULL` : sql`user_id = ${userId}`)

  /**
   * A new start of a limited workflow stored queued, with its opening events, only while its owner has
   * fewer than `bound` executions queued on its key: the count and the insert are one statement. On
   * Postgres the inserts of one key and owner take turns behind an advisory lock (READ COMMITTED lets
   * two inserts count the same rows), in a transaction of their own, so no transaction ever holds two
   * keys' locks. SQLite has one writer: group-committed like any opening write (a transaction of its
   * own fsyncs once per start, on the event loop), each insert counts those before it. None when the
   * id is taken or the bound is reached (the caller tells which). A failure is a defect, settled by the driver.
   */
  const openQueued = (execution: Execution, events: ReadonlyArray<WorkflowEvent>, bound: number) => {
    const key = execution.concurrencyKey ?? ""
    const write = (run: typeof submit) =>
      writeWithEvents(run, execution.id, events, (staging) => {
        const values = executionRow(staging, execution, events.length)
        const columns = Object.keys(values)
        return [sql`INSERT INTO workflow_executions (${sql.literal(columns.join(", "))})
          SELECT ${sql.csv(columns.map((name) => sql`${values[name as keyof typeof values]}`))}
          WHERE (SELECT COUNT(*) FROM workflow_executions WHERE concurrency_key = ${key} AND status = 'queued'
            AND ${sameOwner(execution.userId)}) < ${bound}
          ON CONFLICT (id) DO NOTHING RETURNING last_seq`]
      })
    return sql.onDialectOrElse({
      pg: () =>
        ownTransaction(sql)(Effect.zipRight(
          sql`SELECT pg_advisory_xact_lock(hashtext(${`workflow_queue:${key}:${execution.userId ?? ""}`}))`,
          write((request) => Effect.orDie(runRequestOn(sql)(request)))
        )),
      orElse: () => write(submit)
    }).pipe(Effect.orDie, Effect.withTracerEnabled(false))
  }

  /** Keys with queued executions, and their workflows (a sweep admits each). */
  const queuedKeys = retried(Effect.flatMap(
    sql`SELECT DISTINCT concurrency_key, workflow_id FROM workflow_executions WHERE status = 'queued' LIMIT ${SWEEP_KEYS}`,
    decodeKeys
  ))

  /** Queued executions per workflow (the queue-depth metric: never per key). */
  const depths = retried(Effect.flatMap(
    sql`SELECT workflow_id, COUNT(*) AS queued FROM workflow_executions WHERE status = 'queued' GROUP BY workflow_id`,
    decodeDepths
  ))

  /**
   * What a start under `interrupt` supersedes: the running and queued executions of `key` created before
   * it by its owner, oldest first. Never a newer one: two starts at once must not cancel each other; and
   * never another owner's (under `scope: 'global'` the key is shared: the start then waits its turn).
   */
  const olderThan = (key: string, userId: string | undefined, createdAt: string, id: string) =>
    retried(
      sql<
        { id: string }
      >`SELECT id FROM workflow_executions WHERE concurrency_key = ${key} AND status IN ('running', 'queued')
      AND ${
        sameOwner(userId)
      } AND (created_at < ${createdAt} OR (created_at = ${createdAt} AND id < ${id})) ORDER BY created_at, id`
    )

  /** A queued execution taken back (reject): cancelled only while still queued, for its deletion; false once admitted. */
  const withdraw = (id: string) =>
    retried(Effect.map(
      sql<
        { id: string }
      >`UPDATE workflow_executions SET status = 'cancelled', queued_at = NULL, ended_at = ${now()}, updated_at = ${now()},
        version = version + 1 WHERE id = ${id} AND status = 'queued' RETURNING id`,
      (rows) => rows.length > 0
    ))

  /**
   * Deletes the rows of keys with no queued or running execution (at most 500 at a time): the table
   * holds only lock tokens, and keys are app data (one per account, say), so it would only grow.
   */
  const forgetIdle = retried(sql`DELETE FROM workflow_concurrency WHERE key IN (
    SELECT c.key FROM workflow_concurrency c WHERE NOT EXISTS (
      SELECT 1 FROM workflow_executions e WHERE e.concurrency_key = c.key AND e.status IN ('queued', 'running')
    ) LIMIT 500)`)

  return {
    admit,
    requeue,
    withdraw,
    forgetIdle,
    openQueued,
    queuedKeys,
    depths,
    olderThan,
    runningCount: (key: string) => retried(runningCount(key))
  }
})

export type ConcurrencyStore = Effect.Effect.Success<typeof makeConcurrencyStore>
