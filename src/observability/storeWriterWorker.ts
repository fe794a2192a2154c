/**
 * The worker thread that writes the observability rows (StoreWriter.ts): its own connection to the
 * service's SQLite file, with the same durability as the service's (WAL, synchronous = FULL), waiting
 * on the service's writes rather than failing when they hold the lock.
 */
import { WorkerRunner } from "@effect/platform"
import { NodeWorkerRunner } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Layer } from "effect"
import { workerData } from "node:worker_threads"
import { makeStoreWrite, type StoreWrite, type StoreWriteRequest } from "./storeWrites.js"

const { filename } = workerData as { readonly filename: string }

const Runner = Layer.unwrapEffect(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe("PRAGMA synchronous = FULL")
    yield* sql.unsafe("PRAGMA busy_timeout = 5000")
    const write = makeStoreWrite(sql)
    // One request at a time: the connection is one, and a prune must not interleave with a batch.
    const lock = yield* Effect.makeSemaphore(1)
    return WorkerRunner.layer((request: StoreWriteRequest) =>
      lock.withPermits(1)(inTransactions(request, write)).pipe(Effect.mapError((error) => describe(error)))
    )
  })
)

/**
 * Rows in transactions of at most TRANSACTION_ROWS: the service's own writes wait on the SQLite lock
 * (busy_timeout, a synchronous sleep on the event loop) while a transaction holds it, so it is kept short.
 */
const TRANSACTION_ROWS = 128

const inTransactions = (request: StoreWriteRequest, write: StoreWrite) => {
  if (request._tag !== "spans" && request._tag !== "logs") return write(request)
  const chunks: Array<StoreWriteRequest> = []
  for (let at = 0; at < request.rows.length; at += TRANSACTION_ROWS) {
    chunks.push({ ...request, rows: request.rows.slice(at, at + TRANSACTION_ROWS) })
  }
  return Effect.forEach(chunks, write, { discard: true })
}

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ""}` : String(error)

WorkerRunner.launch(Runner.pipe(Layer.provide(SqliteClient.layer({ filename })), Layer.provide(NodeWorkerRunner.layer))).pipe(
  Effect.tapErrorCause((cause) => Effect.logError("the observability writer stopped", cause)),
  Effect.runFork
)
