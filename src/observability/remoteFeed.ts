import type { SqlClient, SqlError } from "@effect/sql"
import { Effect, Schedule, type Scope } from "effect"

/**
 * Rows other instances store, read back for this instance's live feeds: the table is the truth, and
 * each instance polls it only while someone here subscribes.
 *
 * Rows are followed by their insertion number (`seq`), but on Postgres numbers are handed out before
 * commit, so a row numbered 10 can become visible after one numbered 11. A poll that sees numbers
 * above its cursor with holes between them keeps the holes and asks for them again on the next polls,
 * until they appear or GAP_WAIT passes (a number of a rolled-back insert never appears). Every set it
 * keeps is bounded: at most MAX_GAPS holes, at most PAGE rows a poll.
 */
export interface RemoteFeedOptions<Row extends object> {
  readonly sql: SqlClient.SqlClient
  readonly table: string
  /** The insertion-number column. */
  readonly seq: string
  readonly instanceId: string
  /** Whether anyone here subscribes (the poller idles otherwise). */
  readonly isWatched: () => boolean
  /** Called for each row another instance stored, in insertion order. */
  readonly publish: (row: Row) => void
  readonly interval?: number
}

const PAGE = 500
const MAX_GAPS = 1_000
const GAP_WAIT_MS = 10_000
const INTERVAL_MS = 250

export interface RemoteFeed {
  /** Fixes the starting point (the newest row now) unless already following: call it when a subscription opens. */
  readonly start: Effect.Effect<void>
  /** Reads what arrived since the last poll and publishes other instances' rows. */
  readonly poll: Effect.Effect<void, SqlError.SqlError>
  /** Forgets its place (nobody watches). */
  readonly reset: () => void
}

export const makeRemoteFeed = <Row extends object>(options: RemoteFeedOptions<Row>): RemoteFeed => {
  const { instanceId, sql } = options
  const table = sql.literal(options.table)
  const seqColumn = sql.literal(options.seq)
  let cursor: number | undefined
  /** Missing numbers below the cursor, each with the time it was first missed. */
  const gaps = new Map<number, number>()

  const start = Effect.suspend(() => {
    if (cursor !== undefined) return Effect.void
    return sql<{ top: number | string | null }>`SELECT MAX(${seqColumn}) AS top FROM ${table}`.pipe(
      Effect.map(([row]) => {
        cursor ??= Number(row?.top ?? 0)
      }),
      Effect.catchAllCause((cause) => Effect.logWarning(`could not start the live feed of ${options.table}`, cause))
    )
  })

  const forgetOldGaps = (now: number) => {
    for (const [seq, since] of gaps) if (now - since > GAP_WAIT_MS) gaps.delete(seq)
    // Map iteration is in insertion order: the oldest holes go first.
    for (const seq of gaps.keys()) {
      if (gaps.size <= MAX_GAPS) break
      gaps.delete(seq)
    }
  }

  const poll = Effect.gen(function*() {
    if (cursor === undefined) return
    const from = cursor
    const holes = [...gaps.keys()]
    const numbers = yield* sql<{ seq: number | string; instance: string | null }>`
      SELECT ${seqColumn} AS seq, instance FROM ${table}
      WHERE ${seqColumn} > ${from}${holes.length > 0 ? sql` OR ${sql.in(options.seq, holes)}` : sql``}
      ORDER BY ${seqColumn} LIMIT ${PAGE + holes.length}`
    const now = Date.now()
    const wanted: Array<number> = []
    const filled: Array<number> = []
    const missed: Array<number> = []
    let top = from
    for (const row of numbers) {
      const seq = Number(row.seq)
      if (seq <= from) filled.push(seq)
      else {
        for (let missing = top + 1; missing < seq && missed.length < MAX_GAPS; missing++) missed.push(missing)
        top = seq
      }
      if (row.instance !== instanceId) wanted.push(seq)
    }
    const rows = wanted.length === 0 ?
      [] :
      yield* sql<Row>`SELECT * FROM ${table} WHERE ${sql.in(options.seq, wanted)} ORDER BY ${seqColumn}`
    // The place moves only once the rows are read: a failed poll is repeated whole.
    cursor = top
    for (const seq of filled) gaps.delete(seq)
    for (const seq of missed) gaps.set(seq, now)
    forgetOldGaps(now)
    for (const row of rows) options.publish(row)
  })

  const reset = () => {
    cursor = undefined
    gaps.clear()
  }

  return { start, poll, reset }
}

/**
 * A remote feed with its poller running for as long as the scope lasts: every interval while watched;
 * when nobody watches it forgets its place, and the next subscription starts from the newest row.
 */
export const followRemoteRows = <Row extends object>(
  options: RemoteFeedOptions<Row>
): Effect.Effect<RemoteFeed, never, Scope.Scope> =>
  Effect.gen(function*() {
    const feed = makeRemoteFeed(options)
    yield* Effect.suspend(() => (options.isWatched() ? feed.poll : Effect.sync(feed.reset))).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning(`could not read the live feed of ${options.table}`, cause)),
      Effect.repeat(Schedule.spaced(options.interval ?? INTERVAL_MS)),
      Effect.withTracerEnabled(false),
      Effect.forkScoped
    )
    return feed
  })
