import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Migration } from "../storage/Migrations.js"

/** Finished spans; a trace is the set of spans sharing a trace id. */
export const createSpanTable = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE observability_spans (
    span_id TEXT PRIMARY KEY,
    trace_id TEXT NOT NULL,
    parent_span_id TEXT,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    start_time TEXT NOT NULL,
    end_time TEXT NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL,
    status_code TEXT NOT NULL,
    status_message TEXT,
    attributes TEXT NOT NULL,
    events TEXT NOT NULL,
    entity_type TEXT,
    entity_id TEXT
  )`
  yield* sql`CREATE INDEX observability_spans_by_trace ON observability_spans (trace_id)`
  yield* sql`CREATE INDEX observability_spans_by_entity ON observability_spans (entity_type, entity_id)`
  yield* sql`CREATE INDEX observability_spans_by_start ON observability_spans (start_time)`
})

/**
 * One row per trace and per (entity, trace), kept as spans are written (see traceIndex.ts), so that
 * listing, counting and pruning traces never aggregate the whole span table. Filled from the spans
 * already stored.
 */
export const createTraceIndex = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE observability_traces (
    trace_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    has_root INTEGER NOT NULL,
    start_time TEXT NOT NULL,
    end_time TEXT NOT NULL,
    span_count INTEGER NOT NULL,
    error_count INTEGER NOT NULL
  )`
  yield* sql`CREATE INDEX observability_traces_by_start ON observability_traces (start_time)`
  yield* sql`CREATE TABLE observability_trace_entities (
    entity_type TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    start_time TEXT NOT NULL,
    PRIMARY KEY (entity_type, entity_id, trace_id)
  )`
  yield* sql`CREATE INDEX observability_trace_entities_by_trace ON observability_trace_entities (trace_id)`
  yield* sql`INSERT INTO observability_traces (trace_id, name, has_root, start_time, end_time, span_count, error_count)
    SELECT s.trace_id,
      COALESCE(
        (SELECT r.name FROM observability_spans r WHERE r.trace_id = s.trace_id AND r.parent_span_id IS NULL
          ORDER BY r.start_time LIMIT 1),
        (SELECT f.name FROM observability_spans f WHERE f.trace_id = s.trace_id ORDER BY f.start_time LIMIT 1)),
      CASE WHEN SUM(CASE WHEN s.parent_span_id IS NULL THEN 1 ELSE 0 END) > 0 THEN 1 ELSE 0 END,
      MIN(s.start_time), MAX(s.end_time), COUNT(*), SUM(CASE WHEN s.status_code = 'error' THEN 1 ELSE 0 END)
    FROM observability_spans s GROUP BY s.trace_id`
  yield* sql`INSERT INTO observability_trace_entities (entity_type, entity_id, trace_id, start_time)
    SELECT entity_type, entity_id, trace_id, MIN(start_time) FROM observability_spans
    WHERE entity_type IS NOT NULL AND entity_id IS NOT NULL GROUP BY entity_type, entity_id, trace_id`
})

/**
 * Listing, counting and pruning read the trace index (0005), so these two span indexes are no longer
 * read by any query; every span insert paid for them.
 */
export const dropUnreadSpanIndexes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX IF EXISTS observability_spans_by_entity`
  yield* sql`DROP INDEX IF EXISTS observability_spans_by_start`
})

/**
 * The log, durable and shared by every instance on the store. `id` orders rows as they were inserted
 * (the cross-instance feed follows it, see remoteFeed.ts); `level_rank` makes "this level or worse" a
 * range. Each filter of /api/logs has an index ending in the time, so "the newest n matching" walks
 * one index range backwards; they are partial (only rows that carry the id), so entries without one
 * cost no index write.
 */
export const createLogTable = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const serial = sql.onDialectOrElse({
    pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
    orElse: () => sql.literal("INTEGER PRIMARY KEY")
  })
  yield* sql`CREATE TABLE observability_logs (
    id ${serial},
    instance TEXT NOT NULL,
    logged_at TEXT NOT NULL,
    level TEXT NOT NULL,
    level_rank INTEGER NOT NULL,
    message TEXT NOT NULL,
    trace_id TEXT,
    span_id TEXT,
    agent_id TEXT,
    workflow_id TEXT,
    execution_id TEXT,
    conversation_id TEXT,
    attributes TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX observability_logs_by_time ON observability_logs (logged_at, id)`
  yield* sql`CREATE INDEX observability_logs_by_level ON observability_logs (level_rank, logged_at) WHERE level_rank >= 3`
  for (const column of ["trace_id", "span_id", "agent_id", "workflow_id", "execution_id", "conversation_id"]) {
    yield* sql.unsafe(`CREATE INDEX observability_logs_by_${column.replace(/_id$/, "")} ON observability_logs
      (${column}, logged_at) WHERE ${column} IS NOT NULL`)
  }
})

/**
 * Which instance stored each span, for the cross-instance live feed. On Postgres the feed also needs
 * the insertion order, which the text span id does not give: an identity column (existing rows are
 * numbered too). SQLite is one instance's store and has no such feed.
 */
export const addSpanInstance = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE observability_spans ADD COLUMN instance TEXT`
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.zipRight(
        sql`ALTER TABLE observability_spans ADD COLUMN seq BIGINT GENERATED BY DEFAULT AS IDENTITY`,
        sql`CREATE INDEX observability_spans_by_seq ON observability_spans (seq)`
      ),
    orElse: () => Effect.void
  })
})

/**
 * This feature's migrations of the service's database (on SQLite the rows live in a file of their own,
 * migrated by ObservabilitySql; these create the tables there too, and on Postgres).
 */
export const observabilityMigrations: Record<string, Migration> = {
  "0003_observability_spans": createSpanTable,
  "0005_observability_trace_index": createTraceIndex,
  "0008_observability_unread_span_indexes": dropUnreadSpanIndexes,
  "0011_observability_logs": createLogTable,
  "0012_observability_span_instance": addSpanInstance
}
