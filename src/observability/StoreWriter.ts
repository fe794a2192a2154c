import { Context, Effect, Layer, Option } from "effect"
import { type DatabaseUrl, sqliteFile } from "../storage/Sql.js"
import { workerScript } from "../storage/workerScript.js"
import { type SpawnThread, threadRequests } from "../storage/workerThread.js"
import { observabilityFile, ObservabilitySql } from "./ObservabilitySql.js"
import { makeStoreWrite, type StoreWrite, type StoreWriteRequest } from "./storeWrites.js"

export type { StoreWrite, StoreWriteRequest } from "./storeWrites.js"

/**
 * Writes the observability rows (spans, their trace index, log entries) and prunes them. On a SQLite
 * file, a worker thread with its own connection to the observability file (ObservabilitySql.ts) does it: better-sqlite3 is synchronous, and a batch of
 * hundreds of span rows held the event loop for tens of milliseconds. Elsewhere (Postgres, whose driver
 * is asynchronous; an in-memory SQLite another connection cannot open) the service's own client does.
 */
export class StoreWriter extends Context.Tag("StoreWriter")<StoreWriter, { readonly write: StoreWrite }>() {}

const WORKER_FILE = "storeWriterWorker.js"

export const StoreWriterLive = (databaseUrl: DatabaseUrl, options: { readonly spawn?: SpawnThread } = {}) =>
  Layer.scoped(
    StoreWriter,
    Effect.gen(function*() {
      const sql = yield* ObservabilitySql
      const databaseFile = sqliteFile(databaseUrl)
      const filename = databaseFile === undefined ? undefined : observabilityFile(databaseFile)
      const script = filename === undefined ? undefined : workerScript(import.meta.url, "observability", WORKER_FILE)
      if (filename !== undefined && script === undefined) {
        yield* Effect.logWarning(`${WORKER_FILE} not found: observability rows are written on the main thread`)
      }
      const write = filename !== undefined && script !== undefined
        ? yield* threadRequests<StoreWriteRequest, void>(script, filename, options.spawn)
        : makeStoreWrite(sql)
      return StoreWriter.of({ write })
    })
  )

/** The writer the layer provides, or the service's own client's. */
export const storeWriterOrInline = Effect.flatMap(
  Effect.serviceOption(StoreWriter),
  Option.match({
    onSome: (writer) => Effect.succeed(writer.write),
    onNone: () => Effect.map(ObservabilitySql, makeStoreWrite)
  })
)
