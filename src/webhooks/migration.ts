import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Migration } from "../storage/Migrations.js"

/**
 * Issue #33, completion callbacks: an execution's (and a schedule's) callback URL (`webhook_url`), the durable outbox of
 * deliveries (a row per ending or suspension, inserted in the transaction of that write; never an
 * event) and each owner's signing secrets (the current one, and the previous one during its grace).
 */
export const createWebhooks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_executions ADD COLUMN webhook_url TEXT`
  yield* sql`ALTER TABLE workflow_schedules ADD COLUMN webhook_url TEXT`
  yield* sql`CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    execution_id TEXT NOT NULL,
    workflow_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    url TEXT NOT NULL,
    event TEXT NOT NULL,
    payload TEXT NOT NULL,
    truncated INTEGER NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at TEXT NOT NULL,
    last_status_code INTEGER,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_by_execution ON webhook_deliveries (execution_id, created_at)`
  yield* sql`CREATE INDEX webhook_deliveries_pending_by_owner ON webhook_deliveries (owner) WHERE status = 'pending'`
  yield* sql`CREATE TABLE webhook_secrets (
    owner TEXT PRIMARY KEY,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_until TEXT,
    created_at TEXT NOT NULL,
    rotated_at TEXT NOT NULL
  )`
})

export const webhookMigrations: Record<string, Migration> = {
  "0029_webhooks": createWebhooks
}
