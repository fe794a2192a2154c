import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Migration } from "../../storage/Migrations.js"

/**
 * Issue #33, concurrency limits: an execution of a limited workflow has its `concurrency_key`; while it
 * waits for a slot it is `status = 'queued'` (a state the orphan claim and older instances do not match,
 * shown to clients as running with `waiting: 'concurrency'`) since `queued_at`; `queued_from` says how it
 * is launched once admitted (NULL: a fresh start; `resume`, `wake`, with `-checked` when its data must be
 * checked: it was resumed or woke while its key was full). The slots of a key are its rows in
 * `status = 'running'`, counted; `workflow_concurrency` has one row per key, whose update serializes the
 * claimers of that key (see concurrency/ConcurrencyStore.ts).
 */
export const addConcurrencyLimits = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN concurrency_key TEXT`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN queued_at TEXT`
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN queued_from TEXT`
  yield* sql`CREATE INDEX workflow_executions_slots ON workflow_executions (concurrency_key, status) WHERE concurrency_key IS NOT NULL`
  yield* sql`CREATE INDEX workflow_executions_queued ON workflow_executions (concurrency_key, created_at, id) WHERE status = 'queued'`
  yield* sql`CREATE TABLE workflow_concurrency (
    key TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL,
    admissions INTEGER NOT NULL
  )`
})

export const concurrencyMigrations: Record<string, Migration> = {
  "0030_workflow_concurrency": addConcurrencyLimits
}
