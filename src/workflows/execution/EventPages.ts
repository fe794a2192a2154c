import type { SqlClient } from "@effect/sql"
import { Chunk, Effect, Option, Stream } from "effect"
import type { ExecutionStore, StoredEvent } from "./ExecutionStore.js"
import { retryingRead } from "./storeRetry.js"

/**
 * What a reader of an execution's events (the re-attach stream, the whole record) holds at a time
 * (issue #42): the events of a page as JSON, values inline, come to at most this, or a page is a single
 * event when that one is larger.
 */
export const PAGE_BYTES = 256 * 1024

/** Sizes read to find a page: a page of small events stops at this many. */
const SIZES_PER_READ = 1000

/**
 * How many of the execution's events after `afterSeq` (up to `toSeq` when given, at most `maxCount`) make the next page: read from
 * the events' sizes (`bytes`, migration 0032) before any value is. A row stored before that has no
 * size: plain JSON counts as its text; one that refers to stored values may be any size, so it is a
 * page of its own.
 */
export const pageLength = (
  sql: SqlClient.SqlClient,
  id: string,
  afterSeq: number,
  toSeq?: number,
  maxCount = SIZES_PER_READ
) =>
  Effect.map(
    sql<{ readonly bytes: number | string | null }>`SELECT COALESCE(bytes, CASE WHEN event LIKE '~%' THEN NULL ELSE ${
      sql.onDialectOrElse({ pg: () => sql`octet_length(event)`, orElse: () => sql`length(CAST(event AS BLOB))` })
    } END) AS bytes FROM workflow_events WHERE execution_id = ${id} AND seq > ${afterSeq}${
      toSeq === undefined ? sql`` : sql` AND seq <= ${toSeq}`
    }
      ORDER BY seq LIMIT ${Math.min(maxCount, SIZES_PER_READ)}`,
    (sizes) => {
      let total = 0
      let taken = 0
      for (const { bytes } of sizes) {
        if (bytes === null) return taken === 0 ? 1 : taken
        total += Number(bytes)
        if (taken > 0 && total > PAGE_BYTES) break
        taken++
      }
      return taken
    }
  )

/**
 * The stored events numbered after `from` (up to `to` when given), read a page at a time as the stream
 * is pulled, and given one at a time: a reader holds one page, and a response writes a frame and waits
 * for the socket to take it before it asks for the next. A store error (a connection reset) is tried again.
 */
export const pagedEvents = (
  store: ExecutionStore["Type"],
  id: string,
  from: number,
  to?: number
): Stream.Stream<StoredEvent> =>
  Stream.paginateChunkEffect(from, (cursor) =>
    to !== undefined && cursor >= to
      ? Effect.succeed([Chunk.empty<StoredEvent>(), Option.none<number>()] as const)
      : Effect.map(retryingRead(store.eventPage(id, cursor, to)), (page) => {
        const last = page.at(-1)?.seq
        return [Chunk.unsafeFromArray(page), last === undefined ? Option.none() : Option.some(last)] as const
      })).pipe(Stream.rechunk(1))
