import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Migration } from "../storage/Migrations.js"

/**
 * What the background pruning (RecordRetention) walks, oldest first, a batch at a time: finished
 * executions by when they ended (partial: running and suspended rows are never candidates and cost no
 * entry), conversation messages and history entries by when they were written, and the
 * Idempotency-Keys of an execution (deleted with it).
 */
export const createRetentionIndexes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX workflow_executions_finished_by_end ON workflow_executions (ended_at, id)
    WHERE status IN ('completed', 'error', 'cancelled')`
  yield* sql`CREATE INDEX workflow_idempotency_keys_by_execution ON workflow_idempotency_keys (execution_id)`
  yield* sql`CREATE INDEX agent_messages_by_created ON agent_messages (created_at, id)`
  yield* sql`CREATE INDEX agent_history_by_start ON agent_history (start_time, id)`
})

export const retentionMigrations: Record<string, Migration> = {
  "0014_retention_indexes": createRetentionIndexes
}
