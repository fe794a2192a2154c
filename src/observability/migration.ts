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
