import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { join } from "node:path"
import { Worker } from "node:worker_threads"
import { DatabaseLive } from "../src/Database.js"
import { ObservabilitySql, ObservabilitySqlLive } from "../src/observability/ObservabilitySql.js"
import { type SpanRecord } from "../src/observability/Span.js"
import { spanRow } from "../src/observability/spanRows.js"
import { StoreWriter, StoreWriterLive } from "../src/observability/StoreWriter.js"
import { TraceStore, TraceStoreLive } from "../src/observability/TraceStore.js"
import { tempDir } from "./support/TestServer.js"
import { expectingThreadDeath } from "./support/threadDeaths.js"

const span = (traceId: string, spanId: string): SpanRecord => ({
  traceId,
  spanId,
  parentSpanId: null,
  name: `span ${spanId}`,
  kind: "internal",
  startTime: new Date().toISOString(),
  endTime: new Date().toISOString(),
  durationMs: 1,
  status: { code: "ok" },
  attributes: { "entity.type": "agent", "entity.id": "assistant" },
  events: []
})

const spanIds = Effect.flatMap(
  ObservabilitySql,
  (sql) =>
    Effect.map(
      sql<{ span_id: string }>`SELECT span_id FROM observability_spans ORDER BY span_id`,
      (rows) => rows.map((row) => row.span_id)
    )
)

describe("the observability writer thread", () => {
  it.scopedLive("writes span rows and their trace index on its own connection to the service's SQLite file", () =>
    expectingThreadDeath(Effect.gen(function*() {
      const url = `file:${join(yield* tempDir, "writer.db")}`
      const threads: Array<Worker> = []
      const sql = ObservabilitySqlLive(url).pipe(Layer.provideMerge(DatabaseLive(url)))
      const context = yield* Layer.build(
        StoreWriterLive(url, {
          spawn: (script, workerData) => {
            const thread = new Worker(script, { workerData })
            threads.push(thread)
            return thread
          }
        }).pipe(Layer.provideMerge(sql))
      )
      const { write } = Context.get(context, StoreWriter)
      yield* write({ _tag: "spans", rows: [span("t1", "a"), span("t1", "b")].map((s) => spanRow(s, "test")) })
      expect(threads).toHaveLength(1)
      expect(yield* Effect.provide(spanIds, context)).toEqual(["a", "b"])
      const sqlClient = Context.get(context, ObservabilitySql)
      expect(
        yield* sqlClient<{ span_count: number }>`SELECT span_count FROM observability_traces WHERE trace_id = 't1'`
      ).toEqual([{ span_count: 2 }])
      expect(yield* sqlClient<{ entity_id: string }>`SELECT entity_id FROM observability_trace_entities`).toEqual([{
        entity_id: "assistant"
      }])

      // The thread dies: what it had is reported failed, a new thread takes over and later rows are stored.
      yield* Effect.promise(() => threads[0].terminate())
      const afterDeath = yield* Effect.exit(
        write({ _tag: "spans", rows: [spanRow(span("t2", "c"), "test")] }).pipe(Effect.timeout("20 seconds"))
      )
      yield* Effect.retry(
        write({ _tag: "spans", rows: [spanRow(span("t3", "d"), "test")] }),
        { times: 20 }
      )
      expect(threads.length).toBeGreaterThanOrEqual(2)
      const stored = yield* Effect.provide(spanIds, context)
      expect(stored).toContain("d")
      // Either the write was queued for the new thread or it failed (and its caller logs the rows lost).
      if (Exit.isSuccess(afterDeath)) expect(stored).toContain("c")
    })))

  it.scopedLive("the TraceStore's flush means stored, through the thread; spans pending at shutdown are written", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const url = `file:${join(dir, "flush.db")}`
      const layer = TraceStoreLive({ maxTraces: 1_000, maxAgeMs: 3_600_000 }, "test").pipe(
        Layer.provideMerge(StoreWriterLive(url)),
        Layer.provideMerge(ObservabilitySqlLive(url)),
        Layer.provideMerge(DatabaseLive(url))
      )
      const ended = (s: SpanRecord) =>
        ({
          spanContext: () => ({ traceId: s.traceId, spanId: s.spanId }),
          parentSpanContext: undefined,
          name: s.name,
          kind: 0,
          startTime: [Math.floor(Date.now() / 1000), 0],
          endTime: [Math.floor(Date.now() / 1000), 1_000_000],
          status: { code: 1 },
          attributes: {},
          events: []
        }) as never
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* Effect.provide(TraceStore, yield* Layer.build(layer))
        store.processor.onEnd(ended(span("f1", "x")))
        yield* store.flush
        expect((yield* store.trace("f1")).map((s) => s.spanId)).toEqual(["x"])
        // Ended and the scope closed at once, before the writer's next round.
        store.processor.onEnd(ended(span("f2", "y")))
      }))
      const reopened = yield* Layer.build(ObservabilitySqlLive(url).pipe(Layer.provide(DatabaseLive(url))))
      expect(yield* Effect.provide(spanIds, reopened)).toEqual(["x", "y"])
    }))
})
