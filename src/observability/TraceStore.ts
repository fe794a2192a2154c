import { SqlSchema } from "@effect/sql"
import type { Context as OtelContext } from "@opentelemetry/api"
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace-base"
import {
  Context,
  Effect,
  Layer,
  type Option,
  Queue,
  Schedule,
  Schema,
  type Scope,
  Stream,
  SubscriptionRef
} from "effect"
import { makeLiveFeed } from "./liveFeed.js"
import { SpanRecordFromRow } from "./observabilityReads.js"
import { ObservabilitySql } from "./ObservabilitySql.js"
import { followRemoteRows } from "./remoteFeed.js"
import { type SpanRecord, toSpanRecord } from "./Span.js"
import { spanRow } from "./spanRows.js"
import { storeWriterOrInline } from "./StoreWriter.js"
import { listTraces, type RetentionOptions, traceCounts, type TraceQuery, type TraceSummary } from "./traceIndex.js"

export type { RetentionOptions, TraceQuery, TraceSummary } from "./traceIndex.js"

export interface SpanEvent {
  readonly type: "span:start" | "span:end"
  readonly span: SpanRecord
}

/**
 * Every finished span, from the tracer's span processor into the SQL store (written in batches off the
 * request path, bounded by trace count and age), plus a live feed of span starts and ends (and, on
 * Postgres, the ends of spans other instances store).
 */
export class TraceStore extends Context.Tag("TraceStore")<TraceStore, {
  readonly processor: SpanProcessor
  /** A live feed of span starts and ends for as long as the scope lasts (bounded). */
  readonly subscribe: Effect.Effect<Queue.Dequeue<SpanEvent>, never, Scope.Scope>
  readonly subscribers: Effect.Effect<number>
  readonly counts: Effect.Effect<{ readonly traceCount: number; readonly spanCount: number }>
  readonly traces: (
    query: TraceQuery
  ) => Effect.Effect<{ readonly traces: ReadonlyArray<TraceSummary>; readonly total: number }>
  readonly trace: (traceId: string) => Effect.Effect<ReadonlyArray<SpanRecord>>
  readonly span: (spanId: string) => Effect.Effect<Option.Option<SpanRecord>>
  /** Waits until every span ended so far is stored. */
  readonly flush: Effect.Effect<void>
}>() {}

const BATCH = 500
const BUFFER = 20_000
const LIVE_BUFFER = 1_024

export const TraceStoreLive = (retention: RetentionOptions, instanceId: string) =>
  Layer.scoped(
    TraceStore,
    Effect.gen(function*() {
      const sql = yield* ObservabilitySql
      const pending = yield* Queue.sliding<SpanRecord>(BUFFER)
      const live = yield* makeLiveFeed<SpanEvent>(LIVE_BUFFER)
      let queued = 0
      // Spans written, or lost to a failed write: `flush` waits for it to reach what was queued before it.
      const written = yield* SubscriptionRef.make(0)

      const processor: SpanProcessor = {
        // Effect sets a span's attributes right after starting it, so its start is published a tick later.
        onStart: (span: Span, _context: OtelContext) => {
          if (live.isWatched()) {
            queueMicrotask(() =>
              live.publish({ type: "span:start", span: toSpanRecord(span as unknown as ReadableSpan, false) })
            )
          }
        },
        onEnd: (span: ReadableSpan) => {
          const record = toSpanRecord(span, true)
          if (pending.unsafeOffer(record)) queued++
          if (live.isWatched()) live.publish({ type: "span:end", span: record })
        },
        forceFlush: () => Promise.resolve(),
        shutdown: () => Promise.resolve()
      }

      const write = yield* storeWriterOrInline
      const prune = write({ _tag: "pruneSpans", retention })

      // The writer's own SQL must not be traced, or every batch would produce the next one.
      // Pruning runs once per `maxTraces` spans written (and on a schedule, for age).
      let sincePrune = 0
      const writeSpans = (spans: ReadonlyArray<SpanRecord>) =>
        Effect.suspend(() => {
          sincePrune += spans.length
          return write({ _tag: "spans", rows: spans.map((span) => spanRow(span, instanceId)) }).pipe(
            Effect.tapErrorCause((cause) =>
              Effect.logWarning(`${spans.length} spans lost: could not store them`, cause)
            ),
            Effect.ignore,
            Effect.zipRight(
              sincePrune >= retention.maxTraces
                ? Effect.zipRight(Effect.ignore(prune), Effect.sync(() => (sincePrune = 0)))
                : Effect.void
            ),
            Effect.ensuring(SubscriptionRef.update(written, (n) => n + spans.length))
          )
        })
      yield* Queue.takeBetween(pending, 1, BATCH).pipe(
        // Uninterruptible: shutdown waits for a batch under way instead of rolling it back.
        Effect.flatMap((chunk) => Effect.uninterruptible(writeSpans([...chunk]))),
        // Gather the spans of the next moment into one transaction instead of writing them one by one.
        Effect.zipRight(Effect.sleep("200 millis")),
        Effect.catchAllCause((cause) => Effect.logWarning("could not store spans", cause)),
        Effect.forever,
        Effect.withTracerEnabled(false),
        Effect.forkScoped
      )
      // On shutdown what waits is written (finalizers run last-added first: before the writer stops).
      yield* Effect.addFinalizer(() =>
        Queue.takeAll(pending).pipe(
          Effect.flatMap((chunk) => chunk.length === 0 ? Effect.void : writeSpans([...chunk])),
          Effect.timeoutOption("2 seconds"),
          Effect.ignore,
          Effect.withTracerEnabled(false)
        )
      )
      yield* prune.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not prune spans", cause)),
        Effect.repeat(Schedule.spaced("30 seconds")),
        Effect.withTracerEnabled(false),
        Effect.forkScoped
      )

      // Other instances' spans, on a store they share (SQLite is one instance's): they are stored when they end.
      const decodeRow = Schema.decodeSync(SpanRecordFromRow)
      const remote = yield* sql.onDialectOrElse({
        pg: () =>
          Effect.map(
            followRemoteRows<typeof SpanRecordFromRow.Encoded>({
              sql,
              table: "observability_spans",
              seq: "seq",
              instanceId,
              isWatched: live.isWatched,
              publish: (row) => live.publish({ type: "span:end", span: decodeRow(row) })
            }),
            (feed) => feed.start
          ),
        orElse: () => Effect.succeed(Effect.void)
      })

      const flush = Effect.suspend(() => {
        const target = queued
        return Stream.runDrain(Stream.takeUntil(written.changes, (n) => n >= target))
      }).pipe(Effect.timeoutOption("5 seconds"), Effect.asVoid)

      const findTrace = SqlSchema.findAll({
        Request: Schema.String,
        Result: SpanRecordFromRow,
        execute: (traceId) => sql`SELECT * FROM observability_spans WHERE trace_id = ${traceId} ORDER BY start_time`
      })
      const findSpan = SqlSchema.findOne({
        Request: Schema.String,
        Result: SpanRecordFromRow,
        execute: (spanId) => sql`SELECT * FROM observability_spans WHERE span_id = ${spanId}`
      })

      return TraceStore.of({
        processor,
        subscribe: Effect.tap(live.subscribe, () => remote),
        subscribers: live.subscribers,
        counts: traceCounts(sql).pipe(Effect.orDie, Effect.withSpan("TraceStore.counts", { captureStackTrace: false })),
        traces: Effect.fn("TraceStore.traces", { captureStackTrace: false })(
          (query: TraceQuery) => listTraces(sql, query),
          Effect.orDie
        ),
        trace: Effect.fn("TraceStore.trace", { captureStackTrace: false })(findTrace, Effect.orDie),
        span: Effect.fn("TraceStore.span", { captureStackTrace: false })(findSpan, Effect.orDie),
        flush
      })
    })
  )
