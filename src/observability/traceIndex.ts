import type { SqlClient } from "@effect/sql"
import * as Effect from "effect/Effect"
import { ownTransaction } from "../storage/transaction.js"
import { makeBatchInsert } from "./batchInsert.js"
import type { TraceSummary } from "./ObservabilitySchemas.js"
import { entityOf, type SpanRecord } from "./Span.js"

/**
 * One row per trace (`observability_traces`) and per entity a trace touches
 * (`observability_trace_entities`), kept up to date as span batches are written. Listing, counting and
 * pruning read these small indexed tables instead of aggregating every stored span, which blocked
 * SQLite's synchronous driver for seconds once tens of thousands of traces were stored.
 */

export type { TraceSummary } from "./ObservabilitySchemas.js"

export interface TraceQuery {
  readonly entityType?: string | undefined
  readonly entityId?: string | undefined
  readonly limit: number
  readonly offset: number
}

export interface RetentionOptions {
  /** Traces kept at most; the oldest go first. */
  readonly maxTraces: number
  /** Traces that started longer ago than this are dropped. */
  readonly maxAgeMs: number
}

type TraceRow = {
  trace_id: string
  name: string
  has_root: number
  start_time: string
  end_time: string
  span_count: number
  error_count: number
}

type EntityRow = {
  entity_type: string
  entity_id: string
  trace_id: string
  start_time: string
}

/** What the index needs of a span (a stored span row carries it all). */
export interface IndexedSpan {
  readonly traceId: string
  readonly parentSpanId: string | null
  readonly name: string
  readonly startTime: string
  readonly endTime: string
  readonly statusCode: string
  readonly entity: { readonly type: string; readonly id: string } | undefined
}

const indexedOf = (span: SpanRecord): IndexedSpan => ({
  traceId: span.traceId,
  parentSpanId: span.parentSpanId,
  name: span.name,
  startTime: span.startTime,
  endTime: span.endTime ?? span.startTime,
  statusCode: span.status.code,
  entity: entityOf(span)
})

/** A batch's spans folded into one row per trace and per (entity, trace): an upsert may touch a row once. */
const fold = (spans: ReadonlyArray<IndexedSpan>) => {
  const traces = new Map<string, TraceRow>()
  const entities = new Map<string, EntityRow>()
  for (const span of spans) {
    const end = span.endTime
    const isRoot = span.parentSpanId === null ? 1 : 0
    const row = traces.get(span.traceId)
    if (row === undefined) {
      traces.set(span.traceId, {
        trace_id: span.traceId,
        name: span.name,
        has_root: isRoot,
        start_time: span.startTime,
        end_time: end,
        span_count: 1,
        error_count: span.statusCode === "error" ? 1 : 0
      })
    } else {
      // The root span names the trace; without one, the earliest span does.
      if (isRoot > row.has_root || (isRoot === row.has_root && span.startTime < row.start_time)) row.name = span.name
      row.has_root = Math.max(row.has_root, isRoot)
      if (span.startTime < row.start_time) row.start_time = span.startTime
      if (end > row.end_time) row.end_time = end
      row.span_count++
      if (span.statusCode === "error") row.error_count++
    }
    const entity = span.entity
    if (entity !== undefined) {
      const key = `${entity.type}\u0000${entity.id}\u0000${span.traceId}`
      const seen = entities.get(key)
      if (seen === undefined) {
        entities.set(key, {
          entity_type: entity.type,
          entity_id: entity.id,
          trace_id: span.traceId,
          start_time: span.startTime
        })
      } else if (span.startTime < seen.start_time) seen.start_time = span.startTime
    }
  }
  return { traces: [...traces.values()], entities: [...entities.values()] }
}

const TRACE_COLUMNS = ["trace_id", "name", "has_root", "start_time", "end_time", "span_count", "error_count"] as const
const ENTITY_COLUMNS = ["entity_type", "entity_id", "trace_id", "start_time"] as const

/** Adds a batch of spans to the per-trace rows (inside the transaction that stores the spans). */
export const makeSpanIndexer = (sql: SqlClient.SqlClient) => {
  const index = makeIndexer(sql)
  return (spans: ReadonlyArray<SpanRecord>) => Effect.suspend(() => index(spans.map(indexedOf)))
}

export const makeIndexer = (sql: SqlClient.SqlClient) => {
  const upsertTraces = makeBatchInsert(sql, {
    table: "observability_traces",
    columns: TRACE_COLUMNS,
    onConflict: `ON CONFLICT (trace_id) DO UPDATE SET
      name = CASE
        WHEN excluded.has_root > observability_traces.has_root THEN excluded.name
        WHEN excluded.has_root < observability_traces.has_root THEN observability_traces.name
        WHEN excluded.start_time < observability_traces.start_time THEN excluded.name
        ELSE observability_traces.name END,
      has_root = CASE WHEN excluded.has_root > observability_traces.has_root
        THEN excluded.has_root ELSE observability_traces.has_root END,
      start_time = CASE WHEN excluded.start_time < observability_traces.start_time
        THEN excluded.start_time ELSE observability_traces.start_time END,
      end_time = CASE WHEN excluded.end_time > observability_traces.end_time
        THEN excluded.end_time ELSE observability_traces.end_time END,
      span_count = observability_traces.span_count + excluded.span_count,
      error_count = observability_traces.error_count + excluded.error_count`
  })
  const upsertEntities = makeBatchInsert(sql, {
    table: "observability_trace_entities",
    columns: ENTITY_COLUMNS,
    onConflict: `ON CONFLICT (entity_type, entity_id, trace_id) DO UPDATE SET
      start_time = CASE WHEN excluded.start_time < observability_trace_entities.start_time
        THEN excluded.start_time ELSE observability_trace_entities.start_time END`
  })
  return (spans: ReadonlyArray<IndexedSpan>) =>
    Effect.suspend(() => {
      const { entities, traces } = fold(spans)
      return Effect.zipRight(
        upsertTraces(traces.map((row) => TRACE_COLUMNS.map((column) => row[column]))),
        upsertEntities(entities.map((row) => ENTITY_COLUMNS.map((column) => row[column])))
      )
    })
}

/** Traces dropped per statement, so that no single synchronous SQLite statement runs long. */
const PRUNE_CHUNK = 500

const dropTraces = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (ids.length === 0) return
    yield* sql`DELETE FROM observability_spans WHERE ${sql.in("trace_id", ids)}`
    yield* sql`DELETE FROM observability_trace_entities WHERE ${sql.in("trace_id", ids)}`
    yield* sql`DELETE FROM observability_traces WHERE ${sql.in("trace_id", ids)}`
  })

/** Drops traces past the age limit, then the oldest beyond `maxTraces`, a chunk per transaction. */
export const pruneTraces = (sql: SqlClient.SqlClient, retention: RetentionOptions) =>
  Effect.gen(function*() {
    const cutoff = new Date(Date.now() - retention.maxAgeMs).toISOString()
    while (true) {
      const old = yield* sql<{ trace_id: string }>`SELECT trace_id FROM observability_traces
        WHERE start_time < ${cutoff} ORDER BY start_time LIMIT ${PRUNE_CHUNK}`
      yield* ownTransaction(sql)(dropTraces(sql, old.map((row) => row.trace_id)))
      if (old.length < PRUNE_CHUNK) break
    }
    while (true) {
      const [{ count }] = yield* sql<{ count: number | string }>`SELECT COUNT(*) AS count FROM observability_traces`
      const excess = Math.min(Number(count) - retention.maxTraces, PRUNE_CHUNK)
      if (excess <= 0) break
      const oldest = yield* sql<{ trace_id: string }>`SELECT trace_id FROM observability_traces
        ORDER BY start_time LIMIT ${excess}`
      yield* ownTransaction(sql)(dropTraces(sql, oldest.map((row) => row.trace_id)))
    }
  })

export const traceCounts = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ traces: number | string; spans: number | string | null }>`
      SELECT COUNT(*) AS traces, SUM(span_count) AS spans FROM observability_traces`,
    ([row]) => ({ traceCount: Number(row.traces), spanCount: Number(row.spans ?? 0) })
  )

/** A page of traces, newest first; with an entity filter, the traces any of whose spans concern it. */
export const listTraces = (sql: SqlClient.SqlClient, query: TraceQuery) =>
  Effect.gen(function*() {
    const byEntity = query.entityType !== undefined || query.entityId !== undefined
    const entityFilter = sql.and([
      ...(query.entityType !== undefined ? [sql`entity_type = ${query.entityType}`] : []),
      ...(query.entityId !== undefined ? [sql`entity_id = ${query.entityId}`] : [])
    ])
    const [{ total }] = byEntity
      ? yield* sql<{ total: number | string }>`SELECT COUNT(DISTINCT trace_id) AS total
          FROM observability_trace_entities WHERE ${entityFilter}`
      : yield* sql<{ total: number | string }>`SELECT COUNT(*) AS total FROM observability_traces`
    const rows = yield* sql<TraceRow>`SELECT * FROM observability_traces
      ${
      byEntity
        ? sql`WHERE trace_id IN (SELECT trace_id FROM observability_trace_entities WHERE ${entityFilter})`
        : sql``
    }
      ORDER BY start_time DESC, trace_id DESC LIMIT ${query.limit} OFFSET ${query.offset}`
    const ids = rows.map((row) => row.trace_id)
    const entities = ids.length === 0 ? [] : yield* sql<EntityRow>`SELECT * FROM observability_trace_entities
      WHERE ${sql.in("trace_id", ids)} ORDER BY start_time`
    const traces = rows.map((row): TraceSummary => {
      // The trace is about the entity of its earliest span that names one.
      const entity = entities.find((candidate) => candidate.trace_id === row.trace_id)
      return {
        traceId: row.trace_id,
        name: row.name,
        entityType: entity?.entity_type ?? null,
        entityId: entity?.entity_id ?? null,
        startTime: row.start_time,
        endTime: row.end_time,
        durationMs: Date.parse(row.end_time) - Date.parse(row.start_time),
        status: Number(row.error_count) > 0 ? "error" : "ok",
        spanCount: Number(row.span_count)
      }
    })
    return { traces, total: Number(total) }
  })
