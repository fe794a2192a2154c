import type { SqlClient } from "@effect/sql"
import * as Effect from "effect/Effect"
import { ownTransaction } from "../storage/transaction.js"
import { makeBatchInsert } from "./batchInsert.js"
import { LEVELS, type LogEntry } from "./ObservabilitySchemas.js"

/**
 * How log entries are stored (`observability_logs`, migration 0011) and pruned, in the writer thread
 * too (observabilityReads.ts reads them back).
 */

export type { LogEntry } from "./ObservabilitySchemas.js"

export interface LogFilter {
  readonly level?: string | undefined
  readonly traceId?: string | undefined
  readonly spanId?: string | undefined
  readonly agentId?: string | undefined
  readonly workflowId?: string | undefined
  readonly executionId?: string | undefined
  readonly conversationId?: string | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
}

export interface LogQuery extends LogFilter {
  readonly limit: number
}

export interface LogRetention {
  /** Entries kept at most; the oldest go first. */
  readonly maxEntries: number
  /** Entries logged longer ago than this are dropped. */
  readonly maxAgeMs: number
}

export const levelRank = (level: string) => LEVELS.indexOf(level as (typeof LEVELS)[number])

/** Whether an entry passes the filters (level is a minimum; since/until are inclusive bounds). */
export const matches = (entry: LogEntry, query: LogFilter): boolean =>
  (query.level === undefined || levelRank(entry.level) >= levelRank(query.level)) &&
  (query.traceId === undefined || entry.traceId === query.traceId) &&
  (query.spanId === undefined || entry.spanId === query.spanId) &&
  (query.agentId === undefined || entry.agentId === query.agentId) &&
  (query.workflowId === undefined || entry.workflowId === query.workflowId) &&
  (query.executionId === undefined || entry.executionId === query.executionId) &&
  (query.conversationId === undefined || entry.conversationId === query.conversationId) &&
  (query.since === undefined || entry.timestamp >= query.since) &&
  (query.until === undefined || entry.timestamp <= query.until)

/** The optional ids, as entry field and column. */
export const IDS = [
  ["traceId", "trace_id"],
  ["spanId", "span_id"],
  ["agentId", "agent_id"],
  ["workflowId", "workflow_id"],
  ["executionId", "execution_id"],
  ["conversationId", "conversation_id"]
] as const

const LOG_COLUMNS = [
  "instance",
  "logged_at",
  "level",
  "level_rank",
  "message",
  ...IDS.map(([, column]) => column),
  "attributes"
]

/** An entry as stored: the values of LOG_COLUMNS, in order (plain values, so it crosses to a worker as is). */
export type LogRowValues = ReadonlyArray<string | number | null>

export const logRow = (entry: LogEntry): LogRowValues => [
  entry.instance,
  entry.timestamp,
  entry.level,
  levelRank(entry.level),
  entry.message,
  ...IDS.map(([field]) => entry[field] ?? null),
  JSON.stringify(entry.attributes)
]

/** Stores a batch of log rows in one transaction. */
export const makeLogRowWriter = (sql: SqlClient.SqlClient) => {
  const insert = makeBatchInsert(sql, { table: "observability_logs", columns: LOG_COLUMNS, onConflict: "" })
  return (rows: ReadonlyArray<LogRowValues>) => ownTransaction(sql)(insert(rows))
}

/** Entries deleted per statement, so that no single synchronous SQLite statement runs long. */
const PRUNE_CHUNK = 500

/** Deletes, a chunk at a time and oldest first, the entries at or before the given one. */
const dropThrough = (sql: SqlClient.SqlClient, last: { readonly logged_at: string; readonly id: number | string }) =>
  Effect.gen(function*() {
    while (true) {
      const ids = yield* sql<{ id: number | string }>`SELECT id FROM observability_logs
        WHERE logged_at < ${last.logged_at} OR (logged_at = ${last.logged_at} AND id <= ${last.id})
        ORDER BY logged_at, id LIMIT ${PRUNE_CHUNK}`
      if (ids.length > 0) yield* sql`DELETE FROM observability_logs WHERE ${sql.in("id", ids.map((row) => row.id))}`
      if (ids.length < PRUNE_CHUNK) return
    }
  })

/** Drops entries past the age limit, then the oldest beyond `maxEntries`, in chunks. */
export const pruneLogs = (sql: SqlClient.SqlClient, retention: LogRetention) =>
  Effect.gen(function*() {
    const cutoff = new Date(Date.now() - retention.maxAgeMs).toISOString()
    const [tooOld] = yield* sql<{ logged_at: string; id: number | string }>`SELECT logged_at, id FROM observability_logs
      WHERE logged_at < ${cutoff} ORDER BY logged_at DESC, id DESC LIMIT 1`
    if (tooOld !== undefined) yield* dropThrough(sql, tooOld)
    const [beyond] = yield* sql<{ logged_at: string; id: number | string }>`SELECT logged_at, id FROM observability_logs
      ORDER BY logged_at DESC, id DESC LIMIT 1 OFFSET ${retention.maxEntries}`
    if (beyond !== undefined) yield* dropThrough(sql, beyond)
  })
