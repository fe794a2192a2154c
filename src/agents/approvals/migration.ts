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

export const approvalMigrations: Record<string, Migration> = {
  "0025_agent_tool_approvals": createApprovalTable
}
