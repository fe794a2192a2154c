import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The statuses an execution can never leave: only these may be deleted. */
export const FINISHED_STATUSES = ["completed", "error", "cancelled"] as const

/**
 * Deletes those of the given executions that have finished, with their events, their stored values and the
 * Idempotency-Keys that point at them (a key left behind would name an execution that is gone, and a
 * retry under it would start a new one under the old id). Run it inside a transaction: the row goes
 * first, conditional on its status, so a running or suspended execution keeps its events. Gives the
 * ids deleted.
 */
export const deleteFinishedExecutions = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (ids.length === 0) return []
    const deleted = yield* sql<{ id: string }>`DELETE FROM workflow_executions
      WHERE ${sql.in("id", ids)} AND status IN ('completed', 'error', 'cancelled') RETURNING id`
    const gone = deleted.map((row) => row.id)
    if (gone.length > 0) {
      yield* sql`DELETE FROM workflow_events WHERE ${sql.in("execution_id", gone)}`
      yield* sql`DELETE FROM workflow_values WHERE ${sql.in("execution_id", gone)}`
      yield* sql`DELETE FROM workflow_step_outputs WHERE ${sql.in("execution_id", gone)}`
      yield* sql`DELETE FROM workflow_idempotency_keys WHERE ${sql.in("execution_id", gone)}`
      yield* sql`DELETE FROM webhook_deliveries WHERE ${sql.in("execution_id", gone)}`
    }
    return gone
  })
