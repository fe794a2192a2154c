import { Migrator, SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { basename, dirname, extname, join } from "node:path"
import { type DatabaseUrl, sqliteFile, StorageError } from "../storage/Sql.js"
import { sqliteConnection } from "../storage/sqliteConnection.js"
import {
  addSpanInstance,
  createLogTable,
  createSpanTable,
  createTraceIndex,
  dropUnreadSpanIndexes
} from "./migration.js"

/**
 * Where the observability rows (spans, the trace index, log entries) live. On a SQLite file, a file of
 * their own beside the service's: SQLite has one writer per file, and the span writer's transactions
 * made the stores' commits (and the event loop, for the commits it makes itself) wait on the lock,
 * every 200 ms. On Postgres, and on an in-memory SQLite, the service's own database.
 */
export class ObservabilitySql extends Context.Tag("ObservabilitySql")<ObservabilitySql, SqlClient.SqlClient>() {}

const TABLES = ["observability_spans", "observability_traces", "observability_trace_entities", "observability_logs"]

/** The observability file beside a SQLite database file: `service.db` -> `service.observability.db`. */
export const observabilityFile = (databaseFile: string): string => {
  const extension = extname(databaseFile)
  return join(dirname(databaseFile), `${basename(databaseFile, extension)}.observability${extension}`)
}

/**
 * Rows written before the observability file existed (in the service's database, where migrations
 * 0003 to 0012 created their tables) move to it once, and their tables there are dropped.
 */
const moveFrom = (databaseFile: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`ATTACH DATABASE ${databaseFile} AS service`
    yield* sql.withTransaction(Effect.gen(function*() {
      const present = new Set(
        (yield* sql<{ name: string }>`SELECT name FROM service.sqlite_master WHERE type = 'table'`).map((row) =>
          row.name
        )
      )
      for (const table of TABLES.filter((name) => present.has(name))) {
        const columns = (yield* sql<{ name: string }>`SELECT name FROM pragma_table_info(${table}, 'service')`).map((
          row
        ) => row.name)
        const list = columns.join(", ")
        yield* sql.unsafe(`INSERT INTO main.${table} (${list}) SELECT ${list} FROM service.${table}`)
        yield* sql.unsafe(`DROP TABLE service.${table}`)
      }
    })).pipe(Effect.ensuring(Effect.ignore(sql`DETACH DATABASE service`)))
  })

/** The observability file's own migrations (recorded in its own table), never the service's. */
const migrationsOf = (databaseFile: string) =>
  Migrator.make({})({
    table: "observability_migrations",
    loader: Migrator.fromRecord({
      "0001_observability_tables": Effect.all([
        createSpanTable,
        createTraceIndex,
        dropUnreadSpanIndexes,
        createLogTable,
        addSpanInstance
      ], {
        discard: true
      }),
      "0002_rows_from_the_service_database": moveFrom(databaseFile)
    })
  })

export const ObservabilitySqlLive = (
  databaseUrl: DatabaseUrl
): Layer.Layer<ObservabilitySql, StorageError, SqlClient.SqlClient> => {
  const databaseFile = sqliteFile(databaseUrl)
  if (databaseFile === undefined) return Layer.effect(ObservabilitySql, SqlClient.SqlClient)
  const filename = observabilityFile(databaseFile)
  return Layer.effect(ObservabilitySql, Effect.zipLeft(SqlClient.SqlClient, migrationsOf(databaseFile))).pipe(
    // Beside the database file, in the folder SqlLive made for it.
    Layer.provide(sqliteConnection(filename)),
    Layer.mapError((error) =>
      new StorageError({ message: `Cannot open the observability database ${filename}: ${String(error)}` })
    )
  )
}
