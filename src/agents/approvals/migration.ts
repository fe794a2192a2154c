import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Migration } from "../../storage/Migrations.js"

/**
 * Issue #32: a tool call waiting for a human. Each row is one request, answered once; `state` is what
 * the generation needs to continue (its messages so far, the assistant step with the tool call
 * included), so any instance can answer it. `owned` tells an owner-less row made under authentication
 * (an anonymous caller's) from one made without it.
 */
export const createApprovalTable = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE agent_tool_approvals (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    owned INTEGER NOT NULL,
    owner TEXT,
    conversation_id TEXT,
    tool_name TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    input TEXT NOT NULL,
    state TEXT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT,
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    answered_at TEXT
  )`
  yield* sql`CREATE INDEX agent_tool_approvals_by_call ON agent_tool_approvals (call_id)`
  yield* sql`CREATE INDEX agent_tool_approvals_by_expiry ON agent_tool_approvals (status, expires_at)`
})

/**
 * Approval rows go with their conversation (an index for its delete) and age out by the conversations'
 * retention, oldest first (an index for the pruning walk); a row keeps the requesting call's trace and
 * span, so the answering call's span links to it.
 */
export const approvalRetentionAndTrace = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX agent_tool_approvals_by_conversation ON agent_tool_approvals (agent_id, conversation_id)`
  yield* sql`CREATE INDEX agent_tool_approvals_by_created ON agent_tool_approvals (created_at, id)`
  yield* sql`ALTER TABLE agent_tool_approvals ADD COLUMN trace_id TEXT`
  yield* sql`ALTER TABLE agent_tool_approvals ADD COLUMN span_id TEXT`
})

export const approvalMigrations: Record<string, Migration> = {
  "0025_agent_tool_approvals": createApprovalTable,
  "0026_agent_tool_approvals_retention_trace": approvalRetentionAndTrace
}
