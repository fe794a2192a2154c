import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { addConversationOwnerIndexes, createAgentTables } from "../agents/memory/migration.js"
import { addSpanInstance, createLogTable, createSpanTable, createTraceIndex, dropUnreadSpanIndexes } from "../observability/migration.js"
import { createRetentionIndexes } from "../retention/migration.js"
import {
  addDefinitionHashes,
  addExecutionOwners,
  addExecutionUsers,
  addWorkflowEventCounter,
  createIdempotencyKeys,
  createListingIndexes,
  createWorkflowTables
} from "../workflows/migration.js"

/**
 * Every schema change, in order. Each migration runs once per database and must work on SQLite and
 * Postgres (branch with `sql.onDialectOrElse` where they differ). Never edit a released one: add another.
 */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_agent_memory": createAgentTables,
  "0002_workflow_executions": createWorkflowTables,
  "0003_observability_spans": createSpanTable,
  "0004_workflow_event_counter": addWorkflowEventCounter,
  "0005_observability_trace_index": createTraceIndex,
  "0006_workflow_listing_indexes": createListingIndexes,
  "0008_observability_unread_span_indexes": dropUnreadSpanIndexes,
  "0009_workflow_execution_owners": addExecutionOwners,
  "0010_workflow_idempotency_keys": createIdempotencyKeys,
  "0011_observability_logs": createLogTable,
  "0012_observability_span_instance": addSpanInstance,
  "0013_record_owners": Effect.zipRight(addExecutionUsers, addConversationOwnerIndexes),
  "0014_retention_indexes": createRetentionIndexes,
  "0016_workflow_definition_hash": addDefinitionHashes
}
