import type { SqlClient } from "@effect/sql"
import type { Effect } from "effect"

/**
 * Every schema change, in order. Each migration runs once per database and must work on SQLite and
 * Postgres (branch with `sql.onDialectOrElse` where they differ). Services add theirs here as they
 * gain tables.
 */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {}
