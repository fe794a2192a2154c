import { Cause, Context, Effect, FiberRef, FiberRefs, HashMap, Layer, List, Logger, type LogLevel, Option, type Queue, type Scope, Tracer } from "effect"
import { makeLiveFeed } from "./liveFeed.js"
import { type Budget, capString, jsonSize, LOG_ENTRY_CAP, recordedAttributes, redactQueries } from "./Redaction.js"

export interface LogEntry {
  readonly timestamp: string
  readonly level: string
  readonly message: string
  readonly traceId?: string
  readonly spanId?: string
  readonly agentId?: string
  readonly workflowId?: string
  readonly executionId?: string
  readonly conversationId?: string
  readonly attributes: Record<string, unknown>
}

export interface LogQuery {
  readonly level?: string | undefined
  readonly traceId?: string | undefined
  readonly spanId?: string | undefined
  readonly agentId?: string | undefined
  readonly workflowId?: string | undefined
  readonly executionId?: string | undefined
  readonly conversationId?: string | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
  readonly limit: number
}

export const LEVELS = ["trace", "debug", "info", "warn", "error", "fatal"] as const
const rank = (level: string) => LEVELS.indexOf(level as (typeof LEVELS)[number])

const levelName = (level: LogLevel.LogLevel): string =>
  ({ All: "trace", Trace: "trace", Debug: "debug", Info: "info", Warning: "warn", Error: "error", Fatal: "fatal", None: "fatal" })[
    level._tag
  ]

/** Whether an entry passes the filters (level is a minimum; since/until are inclusive bounds). */
export const matches = (entry: LogEntry, query: Omit<LogQuery, "limit">): boolean =>
  (query.level === undefined || rank(entry.level) >= rank(query.level)) &&
  (query.traceId === undefined || entry.traceId === query.traceId) &&
  (query.spanId === undefined || entry.spanId === query.spanId) &&
  (query.agentId === undefined || entry.agentId === query.agentId) &&
  (query.workflowId === undefined || entry.workflowId === query.workflowId) &&
  (query.executionId === undefined || entry.executionId === query.executionId) &&
  (query.conversationId === undefined || entry.conversationId === query.conversationId) &&
  (query.since === undefined || entry.timestamp >= query.since) &&
  (query.until === undefined || entry.timestamp <= query.until)

const KNOWN = ["agentId", "workflowId", "executionId", "conversationId"] as const

/**
 * The service's log: the last `capacity` entries in memory (a ring) and a live feed. Entries carry the
 * trace and span of the fiber that logged, and agent / workflow / execution / conversation ids from log
 * annotations.
 */
export class LogStore extends Context.Tag("LogStore")<LogStore, {
  readonly logger: Logger.Logger<unknown, void>
  /** A live feed of new entries for as long as the scope lasts (bounded: a slow reader loses the oldest). */
  readonly subscribe: Effect.Effect<Queue.Dequeue<LogEntry>, never, Scope.Scope>
  /** How many live feeds are open. */
  readonly subscribers: Effect.Effect<number>
  readonly count: Effect.Effect<number>
  /** Matching entries, oldest first, the newest `limit` of them. */
  readonly query: (query: LogQuery) => Effect.Effect<ReadonlyArray<LogEntry>>
}>() {}

const LIVE_BUFFER = 1_024

export const LogStoreLive = (capacity: number) =>
  Layer.effect(
    LogStore,
    Effect.gen(function*() {
      const ring: Array<LogEntry | undefined> = new Array(capacity)
      let next = 0
      let size = 0
      const live = yield* makeLiveFeed<LogEntry>(LIVE_BUFFER)

      const logger = Logger.make<unknown, void>(({ annotations, cause, context, date, logLevel, message }) => {
        const span = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
        const annotated: Record<string, unknown> = {}
        const known: Record<string, string> = {}
        for (const [key, value] of HashMap.toEntries(annotations)) {
          if ((KNOWN as ReadonlyArray<string>).includes(key)) known[key] = capString(String(value))
          else annotated[key] = value
        }
        if (!Cause.isEmpty(cause)) annotated.cause = Cause.pretty(cause)
        const text = List.isList(message) ? [...message].map(String).join(" ") : Array.isArray(message) ? message.map(String).join(" ") : String(message)
        // Entries are redacted and capped like spans: they are kept, served and pushed to sockets too.
        const recordedMessage = capString(redactQueries(text))
        const budget: Budget = { left: LOG_ENTRY_CAP - jsonSize(recordedMessage) }
        const { attributes } = recordedAttributes(annotated, budget)
        const entry: LogEntry = {
          timestamp: date.toISOString(),
          level: levelName(logLevel),
          message: recordedMessage,
          ...Option.match(span, { onNone: () => ({}), onSome: (s) => ({ traceId: s.traceId, spanId: s.spanId }) }),
          ...known,
          attributes
        }
        ring[next] = entry
        next = (next + 1) % capacity
        size = Math.min(size + 1, capacity)
        live.publish(entry)
      })

      const query = (q: LogQuery) =>
        Effect.sync(() => {
          const out: Array<LogEntry> = []
          for (let i = 0; i < size && out.length < q.limit; i++) {
            const entry = ring[(next - 1 - i + capacity) % capacity]!
            if (matches(entry, q)) out.push(entry)
          }
          return out.reverse()
        }).pipe(Effect.withSpan("LogStore.query", { captureStackTrace: false }))

      return LogStore.of({ logger, subscribe: live.subscribe, subscribers: live.subscribers, count: Effect.sync(() => size), query })
    })
  )

/** Adds the store's logger beside the console logger for everything built after it. */
export const LogCaptureLive = Layer.unwrapEffect(Effect.map(LogStore, (store) => Logger.add(store.logger)))
