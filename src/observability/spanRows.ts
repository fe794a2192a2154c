import type { SqlClient } from "@effect/sql"
import * as Effect from "effect/Effect"
import { ownTransaction } from "../storage/transaction.js"
import { makeBatchInsert } from "./batchInsert.js"
import { entityOf, type SpanRecord } from "./Span.js"
import { type IndexedSpan, makeIndexer } from "./traceIndex.js"

/**
 * A span as stored: the values of SPAN_COLUMNS, in order (plain values, so it crosses to a worker as
 * is). Written here, in the writer thread too; read back in observabilityReads.ts.
 */
export type SpanRowValues = readonly [
  spanId: string,
  traceId: string,
  parentSpanId: string | null,
  name: string,
  kind: string,
  startTime: string,
  endTime: string,
  durationMs: number,
  statusCode: string,
  statusMessage: string | null,
  attributes: string,
  events: string,
  entityType: string | null,
  entityId: string | null,
  instance: string
]

export const SPAN_COLUMNS = [
  "span_id",
  "trace_id",
  "parent_span_id",
  "name",
  "kind",
  "start_time",
  "end_time",
  "duration_ms",
  "status_code",
  "status_message",
  "attributes",
  "events",
  "entity_type",
  "entity_id",
  "instance"
]

export const spanRow = (span: SpanRecord, instance: string): SpanRowValues => {
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

const indexedOfRow = (
  [, traceId, parentSpanId, name, , startTime, endTime, , statusCode, , , , entityType, entityId]: SpanRowValues
): IndexedSpan => ({
  traceId,
  parentSpanId,
  name,
  startTime,
  endTime,
  statusCode,
  entity: entityType !== null && entityId !== null ? { type: entityType, id: entityId } : undefined
})

/** Stores a batch of span rows and their trace index in one transaction. */
export const makeSpanRowWriter = (sql: SqlClient.SqlClient) => {
  const insert = makeBatchInsert(sql, {
    table: "observability_spans",
    columns: SPAN_COLUMNS,
    onConflict: "ON CONFLICT (span_id) DO NOTHING"
  })
  const index = makeIndexer(sql)
  return (rows: ReadonlyArray<SpanRowValues>) =>
    ownTransaction(sql)(Effect.zipRight(insert(rows), Effect.suspend(() => index(rows.map(indexedOfRow)))))
}
