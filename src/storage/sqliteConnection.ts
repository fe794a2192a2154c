// Modules, not the packages' indexes: the span writer's thread loads this (storeWriterWorker.ts).
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * Another connection to a SQLite file the service writes (a writer thread's, the observability
 * file's), with the service's durability (WAL, synchronous = FULL), waiting on the other connections'
 * writes rather than failing when they hold the lock.
 */
export const sqliteConnection = (filename: string): Layer.Layer<SqlClient.SqlClient, unknown> =>
  Layer.effectDiscard(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.zipRight(sql.unsafe("PRAGMA synchronous = FULL"), sql.unsafe("PRAGMA busy_timeout = 5000")))
  ).pipe(
    Layer.provideMerge(SqliteClient.layer({ filename }))
  )
