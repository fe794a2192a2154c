import type { SqlClient } from "@effect/sql"
import type { Effect } from "effect"
import { type LogRetention, type LogRowValues, makeLogRowWriter, pruneLogs } from "./logTable.js"
import { makeSpanRowWriter, type SpanRowValues } from "./spanRows.js"
import { pruneTraces, type RetentionOptions } from "./traceIndex.js"

/** What the writer thread is asked to do (plain data: it crosses threads by structured clone). */
export type StoreWriteRequest =
  | { readonly _tag: "spans"; readonly rows: ReadonlyArray<SpanRowValues> }
  | { readonly _tag: "logs"; readonly rows: ReadonlyArray<LogRowValues> }
  | { readonly _tag: "pruneSpans"; readonly retention: RetentionOptions }
  | { readonly _tag: "pruneLogs"; readonly retention: LogRetention }

/** Fails with why, as text (the error crosses threads). */
export type StoreWrite = (request: StoreWriteRequest) => Effect.Effect<void, unknown>

/** The same writes on a given client: the worker's, or the service's when there is no worker. */
export const makeStoreWrite = (sql: SqlClient.SqlClient): StoreWrite => {
  const spans = makeSpanRowWriter(sql)
  const logs = makeLogRowWriter(sql)
  return (request) => {
    switch (request._tag) {
      case "spans":
        return spans(request.rows)
      case "logs":
        return logs(request.rows)
      case "pruneSpans":
        return pruneTraces(sql, request.retention)
      case "pruneLogs":
        return pruneLogs(sql, request.retention)
    }
  }
}
