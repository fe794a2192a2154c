import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * An agent's working memory (issue #32): one small JSON record per (agent, scope, key), the key being
 * the conversation id or the user id, owned (`user_id`) under authentication like the other memory
 * tables. The unique index treats "no owner" as one owner, so anonymous rows are one row too. Retention
 * walks `updated_at`.
 */
export const createWorkingMemoryTable = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const serial = sql.onDialectOrElse({
    pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
    orElse: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT")
  })
  yield* sql`CREATE TABLE agent_working_memory (
    id ${serial},
    agent_id TEXT NOT NULL,
    scope TEXT NOT NULL,
    key TEXT NOT NULL,
    user_id TEXT,
    value TEXT NOT NULL,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL
  )`
  yield* sql`CREATE UNIQUE INDEX agent_working_memory_by_key
    ON agent_working_memory (agent_id, scope, key, (COALESCE(user_id, '')))`
  yield* sql`CREATE INDEX agent_working_memory_by_updated ON agent_working_memory (updated_at, id)`
})
