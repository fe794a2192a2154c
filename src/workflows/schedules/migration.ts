import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Migration } from "../../storage/Migrations.js"

/**
 * Issue #33: a workflow's schedules, from its code (`source = 'code'`) or made through the API. The
 * row holds the next due time (`next_fire_at`, ISO text like `wake_at`); a firing moves it on with one
 * conditional UPDATE, in the transaction that creates the execution `sched:<id>:<fire time>`. Names are
 * unique per workflow and owner (`owner_key`: the creator's id, '' when records are not owned,
 * 'system' for code schedules).
 */
export const createSchedules = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflow_schedules (
    id TEXT PRIMARY KEY,
    workflow_id TEXT NOT NULL,
    name TEXT NOT NULL,
    source TEXT NOT NULL,
    owner_key TEXT NOT NULL,
    user_id TEXT,
    cron TEXT NOT NULL,
    timezone TEXT,
    input TEXT NOT NULL,
    catch_up TEXT NOT NULL,
    paused INTEGER NOT NULL,
    next_fire_at TEXT NOT NULL,
    last_fired_at TEXT,
    last_execution_id TEXT,
    failures INTEGER NOT NULL,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
  yield* sql`CREATE UNIQUE INDEX workflow_schedules_by_name ON workflow_schedules (workflow_id, owner_key, name)`
  yield* sql`CREATE INDEX workflow_schedules_due ON workflow_schedules (next_fire_at) WHERE paused = 0`
  yield* sql`CREATE INDEX workflow_schedules_by_user ON workflow_schedules (user_id)`
})

export const scheduleMigrations: Record<string, Migration> = {
  "0028_workflow_schedules": createSchedules
}
