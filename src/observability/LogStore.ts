import { Context, Effect, Layer, Logger, Queue, Schedule, Schema, type Scope, Stream, SubscriptionRef } from "effect"
import { ConsoleTraceIdsLive } from "./consoleTraceIds.js"
import { makeLiveFeed } from "./liveFeed.js"
import { type LogEntry, type LogQuery, type LogRetention, logRow } from "./logTable.js"
import { countLogs, LogEntryFromRow, selectLogs } from "./observabilityReads.js"
import { ObservabilitySql } from "./ObservabilitySql.js"
import { recordedLogEntry } from "./recordedLogEntry.js"
import { followRemoteRows } from "./remoteFeed.js"
import { storeWriterOrInline } from "./StoreWriter.js"

export { type LogEntry, type LogFilter, type LogQuery, type LogRetention, matches } from "./logTable.js"
export { LEVELS } from "./ObservabilitySchemas.js"

/**
 * The service's log, kept in the SQL store (shared by every instance on it) and bounded by count and
 * age, plus a live feed. Entries carry the instance that logged them, the trace and span of the fiber
 * that logged, and agent / workflow / execution / conversation ids from log annotations.
 */
export class LogStore extends Context.Tag("LogStore")<LogStore, {
  readonly logger: Logger.Logger<unknown, void>
  /**
   * A live feed of new entries for as long as the scope lasts, this instance's and (on Postgres) the
   * other instances' (bounded: a slow reader loses the oldest).
   */
  readonly subscribe: Effect.Effect<Queue.Dequeue<LogEntry>, never, Scope.Scope>
  /** How many live feeds are open here. */
  readonly subscribers: Effect.Effect<number>
  /** Entries stored (every instance's). */
  readonly count: Effect.Effect<number>
  /** Entries this instance dropped because the store could not keep up. */
  readonly dropped: Effect.Effect<number>
  /** Matching entries, oldest first, the newest `limit` of them (every instance's, this one's up to now). */
  readonly query: (query: LogQuery) => Effect.Effect<ReadonlyArray<LogEntry>>
  /** Waits until every entry logged so far is stored. */
  readonly flush: Effect.Effect<void>
  /** Hands every entry this instance records to `sink` too, as long as the scope lasts (an exporter). */
  readonly forward: (sink: (entry: LogEntry) => void) => Effect.Effect<void, never, Scope.Scope>
}>() {}

/**
 * Entries waiting to be written, oldest first, bounded in count and in bytes. A new entry that would
 * pass either bound pushes out the oldest (counted), so a logger never waits for the store.
 */
class Backlog<A> {
  private readonly items: Array<A | undefined>
  private readonly sizes: Array<number>
  private head = 0
  size = 0
  bytes = 0
  dropped = 0
  constructor(private readonly capacity: number, private readonly maxBytes: number) {
    this.items = new Array(capacity)
    this.sizes = new Array(capacity).fill(0)
  }
  push(item: A, bytes: number) {
    while (this.size > 0 && (this.size === this.capacity || this.bytes + bytes > this.maxBytes)) {
      this.shift()
      this.dropped++
    }
    const at = (this.head + this.size) % this.capacity
    this.items[at] = item
    this.sizes[at] = bytes
    this.bytes += bytes
    this.size++
  }
  take(max: number): Array<A> {
    const out: Array<A> = []
    while (this.size > 0 && out.length < max) out.push(this.shift())
    return out
  }
  private shift(): A {
    const item = this.items[this.head]!
    this.items[this.head] = undefined
    this.bytes -= this.sizes[this.head]
    this.head = (this.head + 1) % this.capacity
    this.size--
    return item
  }
}

const BATCH = 500
const BACKLOG = 20_000
const BACKLOG_BYTES = 32 * 1024 * 1024
const LIVE_BUFFER = 1_024
/** Entries logged within this long go into one write. */
const GATHER = "200 millis"

export const LogStoreLive = (options: { readonly instanceId: string; readonly retention: LogRetention }) =>
  Layer.scoped(
    LogStore,
    Effect.gen(function*() {
      const sql = yield* ObservabilitySql
      const live = yield* makeLiveFeed<LogEntry>(LIVE_BUFFER)
      const backlog = new Backlog<LogEntry>(BACKLOG, BACKLOG_BYTES)
      // Offered when the backlog stops being empty, and by `flush`; holds one wake-up at most.
      const wake = yield* Queue.dropping<void>(1)
      let flushWanted = false
      let offered = 0
      // Entries written, or lost to a failed write; with those the backlog dropped, every entry offered is settled.
      const written = yield* SubscriptionRef.make(0)

      const sinks = new Set<(entry: LogEntry) => void>()
      const logger = Logger.make<unknown, void>((call) => {
        const { entry, size } = recordedLogEntry(call, options.instanceId)
        offered++
        backlog.push(entry, size + 256)
        if (backlog.size === 1) wake.unsafeOffer(undefined)
        live.publish(entry)
        for (const sink of sinks) sink(entry)
      })

      const write = yield* storeWriterOrInline
      const prune = write({ _tag: "pruneLogs", retention: options.retention })
      let sincePrune = 0
      /**
       * Writes what waits now (what arrives meanwhile waits for the next round), a transaction per
       * batch: one commit (one fsync on SQLite) instead of one per INSERT statement.
       */
      const writeBacklog = Effect.gen(function*() {
        flushWanted = false
        let left = backlog.size
        while (left > 0) {
          const entries = backlog.take(Math.min(left, BATCH))
          left -= entries.length
          sincePrune += entries.length
          yield* write({ _tag: "logs", rows: entries.map(logRow) }).pipe(
            Effect.ensuring(SubscriptionRef.update(written, (n) => n + entries.length)),
            Effect.uninterruptible
          )
        }
        if (sincePrune >= options.retention.maxEntries) {
          sincePrune = 0
          yield* prune
        }
      })

      // The writer's own SQL is not traced, or every write would produce spans, and those more writes.
      yield* Effect.gen(function*() {
        if (backlog.size === 0) yield* Queue.take(wake)
        yield* Queue.takeAll(wake)
        // Gather what follows for a moment into the same write, unless a query waits for it.
        if (!flushWanted) yield* Effect.timeoutOption(Queue.take(wake), GATHER)
        yield* writeBacklog
      }).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not store log entries", cause)),
        Effect.forever,
        Effect.withTracerEnabled(false),
        Effect.forkScoped
      )
      // On shutdown what waits is written (finalizers run last-added first: before the writer stops).
      yield* Effect.addFinalizer(() =>
        writeBacklog.pipe(Effect.timeoutOption("2 seconds"), Effect.ignore, Effect.withTracerEnabled(false))
      )
      yield* prune.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not prune log entries", cause)),
        Effect.repeat(Schedule.spaced("30 seconds")),
        Effect.withTracerEnabled(false),
        Effect.forkScoped
      )

      const flush = Effect.gen(function*() {
        const target = offered
        const settled = (writtenNow: number) => writtenNow + backlog.dropped >= target
        if (settled(yield* SubscriptionRef.get(written))) return
        flushWanted = true
        wake.unsafeOffer(undefined)
        yield* Stream.runDrain(Stream.takeUntil(written.changes, settled))
      }).pipe(Effect.timeoutOption("5 seconds"), Effect.asVoid)

      // Other instances' entries, on a store they share (SQLite is one instance's).
      const decodeRow = Schema.decodeSync(LogEntryFromRow)
      const remote = yield* sql.onDialectOrElse({
        pg: () =>
          Effect.map(
            followRemoteRows<typeof LogEntryFromRow.Encoded>({
              sql,
              table: "observability_logs",
              seq: "id",
              instanceId: options.instanceId,
              isWatched: live.isWatched,
              publish: (row) => live.publish(decodeRow(row))
            }),
            (feed) => feed.start
          ),
        orElse: () => Effect.succeed(Effect.void)
      })

      return LogStore.of({
        logger,
        subscribe: Effect.tap(live.subscribe, () => remote),
        subscribers: live.subscribers,
        count: Effect.zipRight(flush, countLogs(sql)).pipe(
          Effect.orDie,
          Effect.withSpan("LogStore.count", { captureStackTrace: false })
        ),
        dropped: Effect.sync(() => backlog.dropped),
        query: Effect.fn("LogStore.query", { captureStackTrace: false })(
          (q: LogQuery) => Effect.zipRight(flush, selectLogs(sql, q)),
          Effect.orDie
        ),
        flush,
        forward: (sink) =>
          Effect.acquireRelease(Effect.sync(() => sinks.add(sink)), () => Effect.sync(() => sinks.delete(sink)))
      })
    })
  )

/**
 * Adds the store's logger beside the console logger for everything built after it; the console's lines
 * get the trace and span ids too (consoleTraceIds.ts).
 */
export const LogCaptureLive = Layer.unwrapEffect(
  Effect.map(LogStore, (store) => Layer.merge(Logger.add(store.logger), ConsoleTraceIdsLive))
)
