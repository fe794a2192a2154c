/**
 * The worker thread that commits the service's writes on a SQLite file (StoreCommits.ts): its own
 * connection, with the service's durability (WAL, synchronous = FULL), waiting on other connections'
 * writes rather than failing when they hold the lock; one batch (one transaction) at a time.
 */
// Modules, not the packages' indexes: the thread's bundle then holds what it runs (about a quarter of
// the size), and each thread's V8 heap pays for the code it loads.
import * as NodeWorkerRunner from "@effect/platform-node/NodeWorkerRunner"
import * as WorkerRunner from "@effect/platform/WorkerRunner"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { workerData } from "node:worker_threads"
import { collectWorkerHeapWhenIdle } from "../ops/WorkerIdleHeap.js"
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
    const idle = yield* collectWorkerHeapWhenIdle(Effect.sync(() => db.pragma("shrink_memory")))
    return WorkerRunner.layer((batch: ReadonlyArray<CommitRequest>) =>
      Effect.sync(() => {
        idle.worked()
        return commitBatch(batch)
      })
    )
  })
)

WorkerRunner.launch(Runner.pipe(Layer.provide(NodeWorkerRunner.layer))).pipe(
  Effect.withTracerEnabled(false),
  Effect.tapErrorCause((cause) => Effect.logError("the store's commit thread stopped", cause)),
  Effect.runFork
)
