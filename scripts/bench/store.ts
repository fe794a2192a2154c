/**
 * What the bench does to databases without HTTP: stores executions through the service's own
 * ExecutionStore and SQL layers (loaded from dist/, so they are the code the service runs), and reads
 * the durability settings in force.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type * as DatabaseModule from "../../src/Database.js"
import type * as StoreModule from "../../src/workflows/execution/ExecutionStore.js"
import type * as StoreLiveModule from "../../src/workflows/execution/ExecutionStoreLive.js"
import { printableUrl } from "./lab.js"
import { REPO_ROOT } from "./processes.js"

const fromDist = <M>(path: string): Promise<M> =>
  import(pathToFileURL(join(REPO_ROOT, "dist", path)).href) as Promise<M>

const sqlLayer = async (databaseFile: string) => {
  const { DatabaseLive } = await fromDist<typeof DatabaseModule>("Database.js")
  return DatabaseLive(`file:${databaseFile}`)
}

const SEED_BATCH = 1_000
const SEED_EPOCH = Date.UTC(2026, 0, 1)

/**
 * Stores `count` completed `pipeline` executions (each created, then finished, with its two events)
 * through the service's ExecutionStore, a batch of them per transaction (each execution's writes are
 * savepoints inside it), on the database the service will open. Creation times are one second apart.
 */
export const seedExecutions = async (databaseFile: string, count: number, deadlineMs: number): Promise<number> => {
  const { ExecutionStore } = await fromDist<typeof StoreModule>("workflows/execution/ExecutionStore.js")
  const { ExecutionStoreLive } = await fromDist<typeof StoreLiveModule>("workflows/execution/ExecutionStoreLive.js")
  const deadline = Date.now() + deadlineMs
  const seedOne = (store: StoreModule.ExecutionStore["Type"], index: number) => {
    const id = `seed-${String(index).padStart(7, "0")}`
    const createdAt = new Date(SEED_EPOCH + index * 1_000).toISOString()
    const endedAt = new Date(SEED_EPOCH + index * 1_000 + 7).toISOString()
    const input = { text: " hi ", n: index % 50 }
    const output = { text: "hi", upper: "HI", length: 2, doubled: index % 50, winner: "fast" }
    return Effect.zipRight(
      store.create(
        {
          id,
          workflowId: "pipeline",
          workflowName: "Pipeline",
          status: "running",
          input,
          context: {},
          user: null,
          stepIndex: 0,
          stepData: {},
          currentData: input,
          metadata: { traceId: "", spanId: "" },
          version: 0,
          lastSeq: 1,
          createdAt,
          updatedAt: createdAt
        },
        [{ type: "workflow-start", executionId: id, from: "Pipeline", timestamp: createdAt, status: "running", input }]
      ),
      store.finish(
        { id, version: 0 },
        { status: "completed", output },
        { type: "workflow-complete", executionId: id, from: "Pipeline", timestamp: endedAt, status: "success", output }
      )
    )
  }
  const program = Effect.gen(function*() {
    const store = yield* ExecutionStore
    let stored = 0
    while (stored < count && Date.now() < deadline) {
      const end = Math.min(count, stored + SEED_BATCH)
      const indexes = Array.from({ length: end - stored }, (_, offset) => stored + offset)
      // Concurrent writes share the store's group commits (up to 256 per transaction).
      yield* Effect.forEach(indexes, (index) => seedOne(store, index), { concurrency: "unbounded", discard: true })
      stored = end
    }
    return stored
  })
  const layer = ExecutionStoreLive.pipe(Layer.provideMerge(await sqlLayer(databaseFile)))
  return Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(layer))))
}

export interface Durability {
  readonly sqliteJournalMode: string
  readonly sqliteSynchronous: string
  readonly postgresSynchronousCommit: string
}

const SYNCHRONOUS_NAMES = ["OFF", "NORMAL", "FULL", "EXTRA"]

/**
 * SQLite's `journal_mode` and `synchronous` on a connection opened the way the service opens one (its
 * SQL layer from dist/, on a database it has used), and Postgres' `synchronous_commit` on the local server.
 */
export const readDurability = async (databaseFile: string, postgresUrl: string): Promise<Durability> => {
  const sqlite = await Effect.runPromise(Effect.scoped(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const journal = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      const synchronous = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
      const level = Number(synchronous[0]?.synchronous)
      return { journal: String(journal[0]?.journal_mode), synchronous: `${SYNCHRONOUS_NAMES[level] ?? "?"} (${level})` }
    }).pipe(Effect.provide(await sqlLayer(databaseFile)))
  ))
  return {
    sqliteJournalMode: sqlite.journal,
    sqliteSynchronous: sqlite.synchronous,
    postgresSynchronousCommit: await postgresSynchronousCommit(postgresUrl)
  }
}

const postgresSynchronousCommit = async (url: string): Promise<string> => {
  const { PgClient } = await import("@effect/sql-pg")
  const show = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ synchronous_commit: string }>`SHOW synchronous_commit`
    return String(rows[0]?.synchronous_commit)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1, connectTimeout: "3 seconds" })))
  return Effect.runPromise(
    Effect.scoped(show).pipe(
      Effect.timeout("5 seconds"),
      Effect.catchAllCause(() => Effect.succeed(`not reachable at ${printableUrl(url)}`))
    )
  )
}
