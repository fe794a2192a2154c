import { Worker } from "@effect/platform"
import { NodeWorker } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Context, Deferred, Effect, Layer, Option, Scope } from "effect"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Worker as ThreadWorker } from "node:worker_threads"
import { sqliteFile } from "../storage/Sql.js"
import { makeStoreWrite, type StoreWrite, type StoreWriteRequest } from "./storeWrites.js"

export type { StoreWrite, StoreWriteRequest } from "./storeWrites.js"

/**
 * Writes the observability rows (spans, their trace index, log entries) and prunes them. On a SQLite
 * file, a worker thread with its own connection does it: better-sqlite3 is synchronous, and a batch of
 * hundreds of span rows held the event loop for tens of milliseconds. Elsewhere (Postgres, whose driver
 * is asynchronous; an in-memory SQLite another connection cannot open) the service's own client does.
 */
export class StoreWriter extends Context.Tag("StoreWriter")<StoreWriter, { readonly write: StoreWrite }>() {}

const WORKER_FILE = "storeWriterWorker.js"

/**
 * The worker's script: beside this module in tsc's output (dist/observability/), under
 * dist/observability/ from the bundle (dist/main.js or one of its dist/chunks/), and the built one when
 * this module runs from source (tests, after `npm run build`).
 */
const workerScript = (): string | undefined =>
  [`./${WORKER_FILE}`, `./observability/${WORKER_FILE}`, `../observability/${WORKER_FILE}`, `../../dist/observability/${WORKER_FILE}`]
    .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
    .find((path) => existsSync(path))

/** Starts the writer's thread (again, if it dies). */
export type SpawnWriter = (script: string, workerData: { readonly filename: string }) => ThreadWorker

const spawnThread: SpawnWriter = (script, workerData) => new ThreadWorker(script, { workerData })

const workerWrite = (script: string, filename: string, spawn: SpawnWriter) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const spawned = yield* Deferred.make<Worker.Worker<StoreWriteRequest, void, unknown>, unknown>()
    // Started by the first write, in the background: start-up does not pay for the thread's boot. If
    // the thread dies, @effect/platform starts a new one (the writes it had are failed, and reported by
    // their callers).
    const start = Effect.flatMap(Worker.WorkerManager, (manager) => manager.spawn<StoreWriteRequest, void, unknown>({})).pipe(
      Effect.exit,
      Effect.flatMap((exit) => Deferred.done(spawned, exit)),
      Effect.provide(NodeWorker.layer(() => spawn(script, { filename }))),
      Scope.extend(scope),
      Effect.forkIn(scope)
    )
    let started = false
    const write: StoreWrite = (request) =>
      Effect.suspend(() => {
        if (started) return Effect.flatMap(Deferred.await(spawned), (worker) => worker.executeEffect(request))
        started = true
        return Effect.zipRight(start, write(request))
      })
    return write
  })

export const StoreWriterLive = (databaseUrl: string, options: { readonly spawn?: SpawnWriter } = {}) =>
  Layer.scoped(
    StoreWriter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const filename = sqliteFile(databaseUrl)
      const script = filename === undefined ? undefined : workerScript()
      if (filename !== undefined && script === undefined) {
        yield* Effect.logWarning(`${WORKER_FILE} not found: observability rows are written on the main thread`)
      }
      const write = filename !== undefined && script !== undefined ? yield* workerWrite(script, filename, options.spawn ?? spawnThread) : makeStoreWrite(sql)
      return StoreWriter.of({ write })
    })
  )

/** The writer the layer provides, or the service's own client's. */
export const storeWriterOrInline = Effect.flatMap(
  Effect.serviceOption(StoreWriter),
  Option.match({
    onSome: (writer) => Effect.succeed(writer.write),
    onNone: () => Effect.map(SqlClient.SqlClient, makeStoreWrite)
  })
)
