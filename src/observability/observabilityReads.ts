import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { column, NumberColumn, optionalColumn } from "../storage/ColumnSchemas.js"
import { IDS, levelRank, type LogQuery } from "./logTable.js"
import { LogEntry } from "./ObservabilitySchemas.js"
import { SpanRecord } from "./Span.js"

/**
 * Spans and log entries read back from their tables, decoded through Schemas: apart from the modules
 * that write them (spanRows.ts, logTable.ts), which the writer thread loads, so that its bundle and
 * heap hold no Schema.
 */

/** The columns a stored span is read back from (`SELECT *`). */
const SpanRow = Schema.Struct({
  span_id: Schema.String,
  trace_id: Schema.String,
  parent_span_id: Schema.NullOr(Schema.String),
  name: Schema.String,
  kind: Schema.String,
  start_time: Schema.String,
  end_time: Schema.String,
  duration_ms: NumberColumn,
  status_code: Schema.String,
  status_message: Schema.NullOr(Schema.String),
  attributes: Schema.parseJson(SpanRecord.fields.attributes),
  events: Schema.parseJson(SpanRecord.fields.events)
})

/** A stored span, from its row. */
export const SpanRecordFromRow = Schema.transform(SpanRow, Schema.typeSchema(SpanRecord), {
  strict: true,
  decode: (row) => ({
    traceId: row.trace_id,
    spanId: row.span_id,
    parentSpanId: row.parent_span_id,
    name: row.name,
    kind: row.kind,
    startTime: row.start_time,
    endTime: row.end_time,
    durationMs: row.duration_ms,
    status: { code: row.status_code, ...(row.status_message ? { message: row.status_message } : {}) },
    attributes: row.attributes,
    events: row.events
  }),
  encode: (span) => ({
    span_id: span.spanId,
    trace_id: span.traceId,
    parent_span_id: span.parentSpanId,
    name: span.name,
    kind: span.kind,
    start_time: span.startTime,
    end_time: span.endTime ?? span.startTime,
    duration_ms: span.durationMs ?? 0,
    status_code: span.status.code,
    status_message: span.status.message ?? null,
    attributes: span.attributes,
    events: span.events
  })
})

/** A log entry from its row (`SELECT *`). */
export const LogEntryFromRow = Schema.Struct({
  ...LogEntry.fields,
  timestamp: column(Schema.String, "logged_at"),
  traceId: optionalColumn(Schema.String, "trace_id"),
  spanId: optionalColumn(Schema.String, "span_id"),
  agentId: optionalColumn(Schema.String, "agent_id"),
  workflowId: optionalColumn(Schema.String, "workflow_id"),
  executionId: optionalColumn(Schema.String, "execution_id"),
  conversationId: optionalColumn(Schema.String, "conversation_id"),
  attributes: Schema.parseJson(LogEntry.fields.attributes)
})

const decodeEntries = Schema.decodeUnknown(Schema.Array(LogEntryFromRow))

/** The newest `limit` matching entries, oldest first. */
export const selectLogs = (sql: SqlClient.SqlClient, query: LogQuery) =>
  Effect.gen(function*() {
    const where = sql.and([
      // A literal (one of six), so that the partial index on warn and worse matches the query.
      ...(query.level !== undefined ? [sql`level_rank >= ${sql.literal(String(levelRank(query.level)))}`] : []),
      ...IDS.flatMap(([field, column]) => query[field] !== undefined ? [sql`${sql(column)} = ${query[field]!}`] : []),
      ...(query.since !== undefined ? [sql`logged_at >= ${query.since}`] : []),
      ...(query.until !== undefined ? [sql`logged_at <= ${query.until}`] : [])
    ])
    const entries = yield* sql`SELECT * FROM observability_logs WHERE ${where}
      ORDER BY logged_at DESC, id DESC LIMIT ${query.limit}`.pipe(Effect.flatMap(decodeEntries))
    return [...entries].reverse()
  })

const decodeCount = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ count: NumberColumn })))

export const countLogs = (sql: SqlClient.SqlClient) =>
  sql`SELECT COUNT(*) AS count FROM observability_logs`.pipe(
    Effect.flatMap(decodeCount),
    Effect.map(([row]) => row.count)
  )
