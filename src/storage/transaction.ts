import type { SqlClient, SqlError } from "@effect/sql"
import { Effect } from "effect"

/**
 * What a failed COMMIT may leave open on SQLite (a deferred constraint, SQLITE_FULL, an I/O error: the
 * transaction "may or may not" be rolled back), rolled back: @effect/sql does not, and every later
 * statement on the one connection would run inside it. A no-op on Postgres, which ends a failed
 * transaction itself. Runs once the connection is free: never inside another fiber's transaction.
 */
const rollbackLeftOpen = (sql: SqlClient.SqlClient): Effect.Effect<void> =>
  sql.onDialectOrElse({
    sqlite: () => Effect.ignore(sql.unsafe("ROLLBACK")),
    orElse: () => Effect.void
  })

/**
 * On SQLite, the write lock taken first, by a write to `table` that changes nothing. @effect/sql begins
 * a deferred transaction: one that reads first and writes after another connection (a writer thread's)
 * committed is refused at once (SQLITE_BUSY, no busy wait: its snapshot is stale), where a transaction
 * that starts by writing waits for the lock (busy_timeout) like BEGIN IMMEDIATE.
 */
const writeLockFirst = (sql: SqlClient.SqlClient, table: string): Effect.Effect<void, SqlError.SqlError> =>
  sql.onDialectOrElse({
    sqlite: () => Effect.asVoid(sql.unsafe(`DELETE FROM ${table} WHERE 0`)),
    orElse: () => Effect.void
  })

/**
 * `effect` in a transaction of its own (never nested in another), leaving none open when it fails.
 * One that reads before it writes names a table it writes (`writesTo`): on SQLite it then takes the
 * write lock first.
 */
export const ownTransaction =
  (sql: SqlClient.SqlClient, writesTo?: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.onError(
      sql.withTransaction(writesTo === undefined ? effect : Effect.zipRight(writeLockFirst(sql, writesTo), effect)),
      () => rollbackLeftOpen(sql)
    )
