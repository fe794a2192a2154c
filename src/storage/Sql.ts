import { Migrator, SqlClient } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-node"
import { Effect, Layer, Redacted, Schema } from "effect"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { Migrations } from "./Migrations.js"

export const DEFAULT_DATABASE_URL = "file:./.data/service.db"

export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  message: Schema.String
}) {}

export type StorageKind = "sqlite" | "postgres"

/**
 * Where the store lives: `file:path` (SQLite) or `postgres://...`. The service holds it `Redacted`, since
 * a Postgres URL can carry a password; a plain string is accepted where a caller builds one in code.
 */
export type DatabaseUrl = string | Redacted.Redacted<string>

const reveal = (url: DatabaseUrl): string => (Redacted.isRedacted(url) ? Redacted.value(url) : url)

export const storageKind = (url: DatabaseUrl): StorageKind =>
  /^postgres(ql)?:\/\//.test(reveal(url)) ? "postgres" : "sqlite"

const sqlitePath = (url: string): string => url.replace(/^file:(\/\/)?/, "").replace(/^sqlite:(\/\/)?/, "")

/** The SQLite file a URL names, if it names one another connection can open (not Postgres, not `:memory:`). */
export const sqliteFile = (url: DatabaseUrl): string | undefined => {
  if (storageKind(url) === "postgres") return undefined
  const filename = sqlitePath(reveal(url))
  return filename === ":memory:" || filename === "" ? undefined : filename
}

const clientLayer = (url: DatabaseUrl): Layer.Layer<SqlClient.SqlClient, unknown> => {
  if (storageKind(url) === "postgres") {
    // Loaded only when used: the Postgres driver is a noticeable part of start-up time.
    return Layer.unwrapEffect(
      Effect.map(
        Effect.promise(() => import("@effect/sql-pg")),
        ({ PgClient }) =>
          PgClient.layer({ url: Redacted.isRedacted(url) ? url : Redacted.make(url), maxConnections: 10 })
      )
    )
  }
  const filename = sqlitePath(reveal(url))
  return Layer.unwrapEffect(
    Effect.try({
      try: () => {
        if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true })
        return Layer.effectDiscard(fullSync).pipe(Layer.provideMerge(SqliteClient.layer({ filename })))
      },
      catch: (error) => new StorageError({ message: `Cannot open SQLite database ${filename}: ${String(error)}` })
    })
  )
}

/**
 * Every commit reaches the disk before it is acknowledged. better-sqlite3 is compiled with
 * `SQLITE_DEFAULT_WAL_SYNCHRONOUS=1`, so a WAL database would otherwise run at NORMAL, where the last
 * commits can be lost on power failure. The client holds one connection, so once is enough.
 */
const fullSync = Effect.flatMap(SqliteClient.SqliteClient, (sql) => sql.unsafe("PRAGMA synchronous = FULL"))

const runMigrator = Effect.flatMap(
  Migrations,
  (migrations) => Migrator.make({})({ loader: Migrator.fromRecord(migrations) })
)

/**
 * The advisory lock (two-key form, in a namespace of its own apart from the instance locks of
 * src/workflows/InstanceRegistry.ts) that instances starting together on one Postgres take around their
 * migrations. Without it both see no
 * migrations table and both create it, and the loser fails to start.
 */
export const MIGRATION_LOCK = { namespace: 0x5356_4331, key: 1 } as const

const lockStatement = (fn: "pg_advisory_lock" | "pg_advisory_unlock") =>
  `SELECT ${fn}(${MIGRATION_LOCK.namespace}, ${MIGRATION_LOCK.key})`

/**
 * The migrations, one instance at a time on Postgres. The lock is a session lock on a connection held
 * apart from the migrator's (the migrator's own transaction cannot hold it: its first statement is
 * meant to fail on an empty database, which would abort an enclosing transaction); Postgres releases
 * it by itself if this process dies meanwhile. SQLite has a single writer and one process.
 */
const migrate = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () =>
      Effect.scoped(
        Effect.acquireRelease(
          Effect.tap(
            sql.reserve,
            (connection) => connection.executeUnprepared(lockStatement("pg_advisory_lock"), [], undefined)
          ),
          (connection) =>
            Effect.ignore(connection.executeUnprepared(lockStatement("pg_advisory_unlock"), [], undefined))
        ).pipe(Effect.zipRight(runMigrator))
      ),
    orElse: () => runMigrator
  }))

/** The table the migrator records applied migrations in (@effect/sql's default). */
export const MIGRATIONS_TABLE = "effect_sql_migrations"

/**
 * A SQL store: SQLite (`file:path`, the default) or Postgres (`postgres://...`), brought to the
 * `Migrations` in context before anything uses it (the service's: src/Database.ts).
 */
export const SqlLive = (
  url: DatabaseUrl = DEFAULT_DATABASE_URL
): Layer.Layer<SqlClient.SqlClient, StorageError, Migrations> =>
  Layer.effectDiscard(migrate).pipe(
    Layer.provideMerge(clientLayer(url)),
    Layer.mapError((error) =>
      error instanceof StorageError ? error : new StorageError({ message: `Storage unavailable: ${describe(error)}` })
    )
  )

const describe = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const cause = (error as { cause?: unknown }).cause
    const message = (error as { message?: unknown }).message
    if (cause instanceof Error) return cause.message
    if (typeof message === "string" && message !== "") return message
  }
  return String(error)
}
