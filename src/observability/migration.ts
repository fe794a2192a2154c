import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

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
