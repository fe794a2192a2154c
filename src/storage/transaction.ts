import type { SqlClient } from "@effect/sql"
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

/** `effect` in a transaction of its own (never nested in another), leaving none open when it fails. */
export const ownTransaction = (sql: SqlClient.SqlClient) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.onError(sql.withTransaction(effect), () => rollbackLeftOpen(sql))
