import type { SqlClient, Statement } from "@effect/sql"
import { Effect } from "effect"
import type { RetentionLimit } from "../config/ServerConfig.js"
import { ownTransaction } from "../storage/transaction.js"
import { deleteFinishedExecutions } from "../workflows/execution/executionDeletion.js"

/** Rows deleted per transaction, so that no statement (synchronous on SQLite) or lock runs long. */
export const PRUNE_BATCH = 500

/**
 * A table pruned oldest first by a time column, with the id as tie-break; `candidates` narrows it to
 * the rows that may go at all (its text must match the partial index's predicate to use it).
 */
export interface Prunable {
  readonly table: string
  readonly time: string
  readonly id: string
  readonly candidates: (sql: SqlClient.SqlClient) => Statement.Fragment
  /**
   * The index (migration 0014) that walks the candidates oldest first. SQLite is told to use it: without
   * statistics its planner prefers the listing's status index and sorts every finished execution.
   */
  readonly index: string
  /** Deletes a batch in one transaction; gives how many went. */
  readonly remove: (sql: SqlClient.SqlClient, ids: ReadonlyArray<string | number>) => Effect.Effect<number, unknown>
}

const deleteByIds = (table: string, id: string) => (sql: SqlClient.SqlClient, ids: ReadonlyArray<string | number>) =>
  Effect.map(sql`DELETE FROM ${sql(table)} WHERE ${sql.in(id, ids)}`, () => ids.length)

export const finishedExecutions: Prunable = {
  table: "workflow_executions",
  time: "ended_at",
  id: "id",
  candidates: (sql) => sql`status IN ('completed', 'error', 'cancelled') AND ended_at IS NOT NULL`,
  index: "workflow_executions_finished_by_end",
  remove: (sql, ids) =>
    Effect.map(ownTransaction(sql)(deleteFinishedExecutions(sql, ids.map(String))), (gone) => gone.length)
}

/** Rows of `table` removed by id once their `time` column is past the retention. */
const byTime = (table: string, time: string, index: string): Prunable => ({
  table,
  time,
  id: "id",
  candidates: (sql) => sql`${sql(time)} IS NOT NULL`,
  index,
  remove: deleteByIds(table, "id")
})

export const conversationMessages = byTime("agent_messages", "created_at", "agent_messages_by_created")

/** Working memory records (per user or per conversation) go once not updated for the conversations' retention. */
export const workingMemoryRecords = byTime("agent_working_memory", "updated_at", "agent_working_memory_by_updated")

/** Tool approval rows (pending, answered or expired) go once older than the conversations' retention. */
export const approvalRecords = byTime("agent_tool_approvals", "created_at", "agent_tool_approvals_by_created")

/** History entries go with the tool results their calls produced (memory recognises those by them). */
export const historyEntries: Prunable = {
  ...byTime("agent_history", "start_time", "agent_history_by_start"),
  remove: (sql, ids) =>
    ownTransaction(sql)(Effect.zipRight(
      sql`DELETE FROM agent_tool_results WHERE ${sql.in("call_id", ids)}`,
      deleteByIds("agent_history", "id")(sql, ids)
    ))
}

const from = (sql: SqlClient.SqlClient, target: Prunable) =>
  sql.onDialectOrElse({
    sqlite: () => sql`${sql(target.table)} INDEXED BY ${sql(target.index)}`,
    orElse: () => sql`${sql(target.table)}`
  })

type Row = { readonly time: string; readonly id: string | number }

/**
 * Deletes, a batch per transaction and oldest first, the candidates at or before `last`; between
 * batches it lets other work run. Gives how many went.
 */
const dropThrough = (sql: SqlClient.SqlClient, target: Prunable, last: Row, batchSize: number) =>
  Effect.gen(function*() {
    const time = sql(target.time)
    const id = sql(target.id)
    let deleted = 0
    while (true) {
      const batch = yield* sql<{ id: string | number }>`SELECT ${id} AS id FROM ${from(sql, target)}
        WHERE ${target.candidates(sql)} AND (${time} < ${last.time} OR (${time} = ${last.time} AND ${id} <= ${last.id}))
        ORDER BY ${time}, ${id} LIMIT ${batchSize}`
      if (batch.length > 0) deleted += yield* target.remove(sql, batch.map((row) => row.id))
      if (batch.length < batchSize) return deleted
      yield* Effect.sleep("5 millis")
    }
  })

/** Drops the candidates older than `maxAgeMs`, then the oldest beyond `maxCount`; gives how many went. */
export const prune = (
  sql: SqlClient.SqlClient,
  target: Prunable,
  limit: RetentionLimit,
  options: { readonly now?: number; readonly batchSize?: number } = {}
) =>
  Effect.gen(function*() {
    const time = sql(target.time)
    const id = sql(target.id)
    const batchSize = options.batchSize ?? PRUNE_BATCH
    const cutoff = new Date((options.now ?? Date.now()) - limit.maxAgeMs).toISOString()
    let deleted = 0
    const [tooOld] = yield* sql<Row>`SELECT ${time} AS time, ${id} AS id FROM ${from(sql, target)}
      WHERE ${target.candidates(sql)} AND ${time} < ${cutoff} ORDER BY ${time} DESC, ${id} DESC LIMIT 1`
    if (tooOld !== undefined) deleted += yield* dropThrough(sql, target, tooOld, batchSize)
    if (limit.maxCount !== undefined) {
      const [beyond] = yield* sql<Row>`SELECT ${time} AS time, ${id} AS id FROM ${from(sql, target)}
        WHERE ${target.candidates(sql)} ORDER BY ${time} DESC, ${id} DESC LIMIT 1 OFFSET ${limit.maxCount}`
      if (beyond !== undefined) deleted += yield* dropThrough(sql, target, beyond, batchSize)
    }
    return deleted
  })
