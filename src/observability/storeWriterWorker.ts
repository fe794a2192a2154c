/**
 * The worker thread that writes the observability rows (StoreWriter.ts), on its own connection to the
 * service's SQLite file.
 */
// Modules, not the packages' indexes: the thread's bundle then holds what it runs, and each thread's V8
// heap pays for the code it loads.
import * as NodeWorkerRunner from "@effect/platform-node/NodeWorkerRunner"
import * as WorkerRunner from "@effect/platform/WorkerRunner"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { workerData } from "node:worker_threads"
import { messageWithCause } from "../core/errorMessages.js"
import { collectWorkerHeapWhenIdle } from "../ops/WorkerIdleHeap.js"
import { sqliteConnection } from "../storage/sqliteConnection.js"
import { makeStoreWrite, type StoreWrite, type StoreWriteRequest } from "./storeWrites.js"

const { filename } = workerData as { readonly filename: string }

const Runner = Layer.unwrapScoped(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const write = makeStoreWrite(sql)
    // One request at a time: the connection is one, and a prune must not interleave with a batch.
    const lock = yield* Effect.makeSemaphore(1)
    const idle = yield* collectWorkerHeapWhenIdle(lock.withPermits(1)(sql`PRAGMA shrink_memory`.pipe(Effect.ignore)))
    return WorkerRunner.layer((request: StoreWriteRequest) =>
      Effect.suspend(() => {
        idle.worked()
        return lock.withPermits(1)(inTransactions(request, write)).pipe(Effect.mapError(messageWithCause))
      })
    )
  })
)

/**
 * Rows in transactions of at most TRANSACTION_ROWS: the stores' commits (their own thread) and the
 * service's few writes on its own connection wait on the SQLite lock while a transaction holds it.
 */
const TRANSACTION_ROWS = 128

const inTransactions = (request: StoreWriteRequest, write: StoreWrite) => {
  switch (request._tag) {
    case "spans":
      return Effect.forEach(chunksOf(request.rows), (rows) => write({ _tag: "spans", rows }), { discard: true })
    case "logs":
      return Effect.forEach(chunksOf(request.rows), (rows) => write({ _tag: "logs", rows }), { discard: true })
    default:
      return write(request)
  }
}

const chunksOf = <A>(rows: ReadonlyArray<A>): Array<ReadonlyArray<A>> => {
  const chunks: Array<ReadonlyArray<A>> = []
  for (let at = 0; at < rows.length; at += TRANSACTION_ROWS) chunks.push(rows.slice(at, at + TRANSACTION_ROWS))
  return chunks
}

WorkerRunner.launch(Runner.pipe(Layer.provide(sqliteConnection(filename)), Layer.provide(NodeWorkerRunner.layer))).pipe(
  Effect.tapErrorCause((cause) => Effect.logError("the observability writer stopped", cause)),
  Effect.runFork
)
