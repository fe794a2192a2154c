import { type Context, Effect, type Queue, type Scope } from "effect"
import { type LogEntry, type LogQuery, type LogStore, matches } from "./LogStore.js"
import { jsonSize } from "./Redaction.js"

/** The initial batch of a live log feed is the newest entries that fit in this many bytes of JSON. */
export const INITIAL_BYTES = 1024 * 1024

/**
 * What tells entries apart once they have been through the store (the initial batch is read from it,
 * the live feed carries them as logged): an entry equal in all of these is shown once.
 */
const entryKey = (entry: LogEntry) =>
  `${entry.instance}\u0000${entry.timestamp}\u0000${entry.level}\u0000${entry.spanId ?? ""}\u0000${entry.message}`

const newestWithin = (entries: ReadonlyArray<LogEntry>, bytes: number): ReadonlyArray<LogEntry> => {
  let left = bytes
  let first = entries.length
  while (first > 0 && (left -= jsonSize(entries[first - 1]) + 1) >= 0) first--
  return entries.slice(first)
}

export interface LogFollow {
  /** The newest stored entries matching the query, within INITIAL_BYTES. */
  readonly initial: ReadonlyArray<LogEntry>
  /** Every entry logged since the subscription (a sliding window: a slow reader loses its oldest). */
  readonly live: Queue.Dequeue<LogEntry>
  /** Whether a live entry is to be sent: it matches the query and was not in `initial`. */
  readonly isNew: (entry: LogEntry) => boolean
}

/**
 * A live log feed for the scope: subscribed before the initial query, so nothing logged in between is
 * missed, and each entry is sent once (/ws/logs and the LiveLogs RPC).
 */
export const followLogs = (
  logs: Context.Tag.Service<LogStore>,
  query: LogQuery
): Effect.Effect<LogFollow, never, Scope.Scope> =>
  Effect.gen(function*() {
    const live = yield* logs.subscribe
    const initial = newestWithin(yield* logs.query(query), INITIAL_BYTES)
    const inInitial = new Set(initial.map(entryKey))
    return {
      initial,
      live,
      isNew: (entry) => matches(entry, query) && !(inInitial.size > 0 && inInitial.delete(entryKey(entry)))
    }
  })
