import type { SqlClient } from "@effect/sql"
import * as Effect from "effect/Effect"
import { makeBatchInsert } from "./batchInsert.js"
import { entityOf, type SpanRecord } from "./Span.js"
import { type IndexedSpan, makeIndexer } from "./traceIndex.js"

/** A span as stored: the values of SPAN_COLUMNS, in order (plain values, so it crosses to a worker as is). */
export type SpanRow = ReadonlyArray<string | number | null>

export const SPAN_COLUMNS = [
  "span_id", "trace_id", "parent_span_id", "name", "kind", "start_time", "end_time", "duration_ms", "status_code",
  "status_message", "attributes", "events", "entity_type", "entity_id", "instance"
]

export const spanRow = (span: SpanRecord, instance: string): SpanRow => {
  const entity = entityOf(span)
  return [
    span.spanId,
    span.traceId,
    span.parentSpanId,
    span.name,
    span.kind,
    span.startTime,
    span.endTime ?? span.startTime,
    span.durationMs ?? 0,
    span.status.code,
    span.status.message ?? null,
    JSON.stringify(span.attributes),
    JSON.stringify(span.events),
    entity?.type ?? null,
    entity?.id ?? null,
    instance
  ]
}

const indexedOfRow = (row: SpanRow): IndexedSpan => ({
  traceId: row[1] as string,
  parentSpanId: row[2] as string | null,
  name: row[3] as string,
  startTime: row[5] as string,
  endTime: row[6] as string,
  statusCode: row[8] as string,
  entity: row[12] !== null && row[13] !== null ? { type: row[12] as string, id: row[13] as string } : undefined
})

/** Stores a batch of span rows and their trace index in one transaction. */
export const makeSpanRowWriter = (sql: SqlClient.SqlClient) => {
  const insert = makeBatchInsert(sql, { table: "observability_spans", columns: SPAN_COLUMNS, onConflict: "ON CONFLICT (span_id) DO NOTHING" })
  const index = makeIndexer(sql)
  return (rows: ReadonlyArray<SpanRow>) =>
    sql.withTransaction(Effect.zipRight(insert(rows), Effect.suspend(() => index(rows.map(indexedOfRow)))))
}
