import { SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Layer } from "effect"

/**
 * A writer thread's own connection to the service's SQLite file, with the service's durability (WAL,
 * synchronous = FULL) and waiting on the other connections' writes rather than failing when they
 * hold the lock.
 */
export const threadConnection = (filename: string): Layer.Layer<SqlClient.SqlClient, unknown> =>
  Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.zipRight(sql.unsafe("PRAGMA synchronous = FULL"), sql.unsafe("PRAGMA busy_timeout = 5000")))).pipe(
      Layer.provideMerge(SqliteClient.layer({ filename }))
    )
