import { SqlClient } from "@effect/sql"
import type { Context as OtelContext } from "@opentelemetry/api"
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Context, Effect, Layer, Option, Queue, Schedule, type Scope } from "effect"
import { makeLiveFeed } from "./liveFeed.js"
import { entityOf, type SpanRecord, toSpanRecord } from "./Span.js"

export interface SpanEvent {
  readonly type: "span:start" | "span:end"
  readonly span: SpanRecord
}

export interface TraceSummary {
  readonly traceId: string
  readonly name: string
  readonly entityType: string | null
  readonly entityId: string | null
  readonly startTime: string
  readonly endTime: string
  readonly durationMs: number
  readonly status: "ok" | "error"
  readonly spanCount: number
}

export interface TraceQuery {
  readonly entityType?: string | undefined
  readonly entityId?: string | undefined
  readonly limit: number
  readonly offset: number
}

export interface RetentionOptions {
  /** Traces kept at most; the oldest go first. */
  readonly maxTraces: number
  /** Spans older than this are dropped. */
  readonly maxAgeMs: number
}

/**
 * Every finished span, from the tracer's span processor into the SQL store (written in batches off the
 * request path, bounded by trace count and age), plus a live feed of span starts and ends.
 */
export class TraceStore extends Context.Tag("TraceStore")<TraceStore, {
  readonly processor: SpanProcessor
  /** A live feed of span starts and ends for as long as the scope lasts (bounded). */
  readonly subscribe: Effect.Effect<Queue.Dequeue<SpanEvent>, never, Scope.Scope>
  readonly subscribers: Effect.Effect<number>
  readonly counts: Effect.Effect<{ readonly traceCount: number; readonly spanCount: number }>
  readonly traces: (query: TraceQuery) => Effect.Effect<{ readonly traces: ReadonlyArray<TraceSummary>; readonly total: number }>
  readonly trace: (traceId: string) => Effect.Effect<ReadonlyArray<SpanRecord>>
  readonly span: (spanId: string) => Effect.Effect<Option.Option<SpanRecord>>
  /** Waits until every span ended so far is stored. */
  readonly flush: Effect.Effect<void>
}>() {}

interface SpanRow {
  readonly span_id: string
  readonly trace_id: string
  readonly parent_span_id: string | null
  readonly name: string
  readonly kind: string
  readonly start_time: string
  readonly end_time: string
  readonly duration_ms: number
  readonly status_code: string
  readonly status_message: string | null
  readonly attributes: string
  readonly events: string
  readonly entity_type: string | null
  readonly entity_id: string | null
}

const fromRow = (row: SpanRow): SpanRecord => ({
  traceId: row.trace_id,
  spanId: row.span_id,
  parentSpanId: row.parent_span_id,
  name: row.name,
  kind: row.kind,
  startTime: row.start_time,
  endTime: row.end_time,
  durationMs: Number(row.duration_ms),
  status: { code: row.status_code, ...(row.status_message ? { message: row.status_message } : {}) },
  attributes: JSON.parse(row.attributes),
  events: JSON.parse(row.events)
})

const BATCH = 500
const BUFFER = 20_000
const LIVE_BUFFER = 1_024

export const TraceStoreLive = (retention: RetentionOptions) =>
  Layer.scoped(
    TraceStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const pending = yield* Queue.sliding<SpanRecord>(BUFFER)
      const live = yield* makeLiveFeed<SpanEvent>(LIVE_BUFFER)
      let offered = 0
      let written = 0

      const processor: SpanProcessor = {
        // Effect sets a span's attributes right after starting it, so its start is published a tick later.
        onStart: (span: Span, _context: OtelContext) => {
          if (live.isWatched()) {
            queueMicrotask(() => live.publish({ type: "span:start", span: toSpanRecord(span as unknown as ReadableSpan, false) }))
          }
        },
        onEnd: (span: ReadableSpan) => {
          const record = toSpanRecord(span, true)
          offered++
          if (!pending.unsafeOffer(record)) written++
          live.publish({ type: "span:end", span: record })
        },
        forceFlush: () => Promise.resolve(),
        shutdown: () => Promise.resolve()
      }

      const insert = (spans: ReadonlyArray<SpanRecord>) =>
        sql`INSERT INTO observability_spans ${
          sql.insert(spans.map((span) => {
            const entity = entityOf(span)
            return {
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
              attributes: JSON.stringify(span.attributes),
              events: JSON.stringify(span.events),
              entity_type: entity?.type ?? null,
              entity_id: entity?.id ?? null
            }
          }))
        } ON CONFLICT (span_id) DO NOTHING`

      const prune = Effect.gen(function*() {
        const cutoff = new Date(Date.now() - retention.maxAgeMs).toISOString()
        yield* sql`DELETE FROM observability_spans WHERE start_time < ${cutoff}`
        const [{ count }] = yield* sql<{ count: number | string }>`SELECT COUNT(DISTINCT trace_id) AS count FROM observability_spans`
        const excess = Number(count) - retention.maxTraces
        if (excess > 0) {
          yield* sql`DELETE FROM observability_spans WHERE trace_id IN (
            SELECT trace_id FROM observability_spans GROUP BY trace_id ORDER BY MIN(start_time) ASC LIMIT ${excess})`
        }
      })

      // The writer's own SQL must not be traced, or every batch would produce the next one.
      // Pruning counts distinct traces, so it runs once per `maxTraces` spans written (and on a schedule for age).
      let sincePrune = 0
      yield* Queue.takeBetween(pending, 1, BATCH).pipe(
        Effect.flatMap((chunk) => {
          const spans = [...chunk]
          sincePrune += spans.length
          return sql.withTransaction(insert(spans)).pipe(
            Effect.zipRight(sincePrune >= retention.maxTraces ? Effect.zipRight(prune, Effect.sync(() => (sincePrune = 0))) : Effect.void),
            Effect.ensuring(Effect.sync(() => (written += spans.length)))
          )
        }),
        // Gather the spans of the next moment into one transaction instead of writing them one by one.
        Effect.zipRight(Effect.sleep("100 millis")),
        Effect.catchAllCause((cause) => Effect.logWarning("could not store spans", cause)),
        Effect.forever,
        Effect.withTracerEnabled(false),
        Effect.forkScoped
      )
      yield* prune.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not prune spans", cause)),
        Effect.repeat(Schedule.spaced("30 seconds")),
        Effect.withTracerEnabled(false),
        Effect.forkScoped
      )

      const flush = Effect.gen(function*() {
        const target = offered
        while (written < target) yield* Effect.sleep("5 millis")
      }).pipe(Effect.timeoutOption("5 seconds"), Effect.asVoid)

      const traces = (query: TraceQuery) =>
        Effect.gen(function*() {
          const entityFilter = query.entityType !== undefined || query.entityId !== undefined
            ? sql`WHERE trace_id IN (SELECT trace_id FROM observability_spans WHERE ${
              sql.and([
                ...(query.entityType !== undefined ? [sql`entity_type = ${query.entityType}`] : []),
                ...(query.entityId !== undefined ? [sql`entity_id = ${query.entityId}`] : [])
              ])
            })`
            : sql``
          const [{ total }] = yield* sql<{ total: number | string }>`
            SELECT COUNT(DISTINCT trace_id) AS total FROM observability_spans ${entityFilter}`
          const groups = yield* sql<{ trace_id: string; start_time: string; end_time: string; span_count: number | string; errors: number | string }>`
            SELECT trace_id, MIN(start_time) AS start_time, MAX(end_time) AS end_time, COUNT(*) AS span_count,
              SUM(CASE WHEN status_code = 'error' THEN 1 ELSE 0 END) AS errors
            FROM observability_spans ${entityFilter}
            GROUP BY trace_id ORDER BY MIN(start_time) DESC LIMIT ${query.limit} OFFSET ${query.offset}`
          const ids = groups.map((group) => group.trace_id)
          const members = ids.length === 0 ? [] : yield* sql<Pick<SpanRow, "trace_id" | "name" | "parent_span_id" | "start_time" | "entity_type" | "entity_id">>`
            SELECT trace_id, name, parent_span_id, start_time, entity_type, entity_id FROM observability_spans
            WHERE ${sql.in("trace_id", ids)} ORDER BY start_time`
          return {
            total: Number(total),
            traces: groups.map((group): TraceSummary => {
              const spans = members.filter((member) => member.trace_id === group.trace_id)
              const root = spans.find((member) => member.parent_span_id === null) ?? spans[0]
              const entity = spans.find((member) => member.entity_type !== null)
              return {
                traceId: group.trace_id,
                name: root?.name ?? "",
                entityType: entity?.entity_type ?? null,
                entityId: entity?.entity_id ?? null,
                startTime: group.start_time,
                endTime: group.end_time,
                durationMs: Date.parse(group.end_time) - Date.parse(group.start_time),
                status: Number(group.errors) > 0 ? "error" : "ok",
                spanCount: Number(group.span_count)
              }
            })
          }
        }).pipe(Effect.orDie, Effect.withSpan("TraceStore.traces", { captureStackTrace: false }))

      return TraceStore.of({
        processor,
        subscribe: live.subscribe,
        subscribers: live.subscribers,
        counts: sql<{ traces: number | string; spans: number | string }>`
          SELECT COUNT(DISTINCT trace_id) AS traces, COUNT(*) AS spans FROM observability_spans`.pipe(
          Effect.map(([row]) => ({ traceCount: Number(row.traces), spanCount: Number(row.spans) })),
          Effect.orDie,
          Effect.withSpan("TraceStore.counts", { captureStackTrace: false })
        ),
        traces,
        trace: (traceId) =>
          sql<SpanRow>`SELECT * FROM observability_spans WHERE trace_id = ${traceId} ORDER BY start_time`.pipe(
            Effect.map((rows) => rows.map(fromRow)),
            Effect.orDie,
            Effect.withSpan("TraceStore.trace", { captureStackTrace: false })
          ),
        span: (spanId) =>
          sql<SpanRow>`SELECT * FROM observability_spans WHERE span_id = ${spanId}`.pipe(
            Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), fromRow)),
            Effect.orDie,
            Effect.withSpan("TraceStore.span", { captureStackTrace: false })
          ),
        flush
      })
    })
  )
