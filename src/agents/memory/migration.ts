import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Migration } from "../../storage/Migrations.js"
import { createWorkingMemoryTable } from "../workingMemory/migration.js"

/** Conversation messages and the per-agent call history. JSON is stored as text on both dialects. */
export const createAgentTables = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const serial = sql.onDialectOrElse({
    pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
    orElse: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT")
  })
  yield* sql`CREATE TABLE agent_messages (
    id ${serial},
    agent_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    user_id TEXT,
    message TEXT NOT NULL,
    created_at TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX agent_messages_conversation ON agent_messages (agent_id, conversation_id, id)`
  yield* sql`CREATE TABLE agent_history (
    id TEXT PRIMARY KEY,
    agent_id TEXT NOT NULL,
    conversation_id TEXT,
    user_id TEXT,
    input TEXT NOT NULL,
    output TEXT,
    status TEXT NOT NULL,
    start_time TEXT NOT NULL,
    end_time TEXT NOT NULL,
    usage TEXT,
    tool_calls TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX agent_history_by_agent ON agent_history (agent_id, start_time)`
  yield* sql`CREATE INDEX agent_history_by_user ON agent_history (agent_id, user_id, start_time)`
  yield* sql`CREATE INDEX agent_history_by_conversation ON agent_history (agent_id, conversation_id, start_time)`
})

/**
 * Under authentication a conversation is its owner's (`user_id`): memory is read by agent, owner and
 * conversation, and a user's history by conversation.
 */
export const addConversationOwnerIndexes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX agent_messages_by_owner ON agent_messages (agent_id, user_id, conversation_id, id)`
  yield* sql`CREATE INDEX agent_history_by_owner_conversation ON agent_history (agent_id, user_id, conversation_id, start_time)`
})

/**
 * The tool results the service produced in a conversation (a digest of each, with the history entry of
 * the call), so a caller's history can carry only those back to the model.
 */
export const createToolResultTable = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const serial = sql.onDialectOrElse({
    pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
    orElse: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT")
  })
  yield* sql`CREATE TABLE agent_tool_results (
    id ${serial},
    call_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    user_id TEXT,
    tool_call_id TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    outcome TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX agent_tool_results_by_call_id ON agent_tool_results (agent_id, conversation_id, tool_call_id)`
  yield* sql`CREATE INDEX agent_tool_results_by_history ON agent_tool_results (call_id)`
})

/** This feature's migrations (its half of 0013 is joined with the workflows' at src/Database.ts). */
export const memoryMigrations: Record<string, Migration> = {
  "0001_agent_memory": createAgentTables,
  "0017_agent_tool_results": createToolResultTable,
  "0024_agent_working_memory": createWorkingMemoryTable
}
