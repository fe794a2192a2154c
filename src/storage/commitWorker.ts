/**
 * The worker thread that commits the service's writes on a SQLite file (StoreCommits.ts): its own
 * connection, with the service's durability (WAL, synchronous = FULL), waiting on other connections'
 * writes rather than failing when they hold the lock; one batch (one transaction) at a time.
 */
import { WorkerRunner } from "@effect/platform"
import { NodeWorkerRunner } from "@effect/platform-node"
import Database from "better-sqlite3"
import { Effect, Layer } from "effect"
import { workerData } from "node:worker_threads"
import { makeBatchCommitter } from "./commitBatch.js"
import type { CommitRequest } from "./commits.js"

const { filename } = workerData as { readonly filename: string }

const Runner = Layer.unwrapScoped(
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.sync(() => new Database(filename, { timeout: 5000 })),
      (db) => Effect.sync(() => db.close())
    )
    db.pragma("synchronous = FULL")
    const commitBatch = makeBatchCommitter(db)
    return WorkerRunner.layer((batch: ReadonlyArray<CommitRequest>) => Effect.sync(() => commitBatch(batch)))
  })
)

WorkerRunner.launch(Runner.pipe(Layer.provide(NodeWorkerRunner.layer))).pipe(
  Effect.withTracerEnabled(false),
  Effect.tapErrorCause((cause) => Effect.logError("the store's commit thread stopped", cause)),
  Effect.runFork
)
