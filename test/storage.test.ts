import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import { storageKind } from "../src/storage/Sql.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

/** Opens the store, writes a row, closes it; opens it again and reads the row back. */
const roundTrip = (url: string) =>
  Effect.gen(function*() {
    const write = Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`
      yield* sql`INSERT INTO probe ${sql.insert({ id: 1, note: "kept" })}`
    })
    const read = Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const migrations = yield* sql<{ count: number | string }>`SELECT COUNT(*) AS count FROM effect_sql_migrations`
      const rows = yield* sql<{ note: string }>`SELECT note FROM probe WHERE id = 1`
      return { migrations: Number(migrations[0].count), rows }
    })
    yield* Effect.scoped(Layer.build(DatabaseLive(url)).pipe(Effect.flatMap((ctx) => Effect.provide(write, ctx))))
    return yield* Effect.scoped(Layer.build(DatabaseLive(url)).pipe(Effect.flatMap((ctx) => Effect.provide(read, ctx))))
  })

describe("SQL store", () => {
  it("chooses the backend from the URL", () => {
    expect(storageKind("file:./.data/service.db")).toBe("sqlite")
    expect(storageKind("postgres://u@h/db")).toBe("postgres")
    expect(storageKind("postgresql://u@h/db")).toBe("postgres")
  })

  it.scoped("SQLite: runs in WAL with synchronous = FULL, so an acknowledged commit is on disk", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const read = Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [journal] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
        const [sync] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
        return { journal: journal.journal_mode, sync: sync.synchronous }
      })
      const settings = yield* Effect.scoped(
        Layer.build(DatabaseLive(`file:${join(dir, "durable.db")}`)).pipe(
          Effect.flatMap((ctx) => Effect.provide(read, ctx))
        )
      )
      expect(settings).toEqual({ journal: "wal", sync: 2 })
    }))

  it.scoped("SQLite: creates the file and its folder, migrates, and keeps data across restarts", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = join(dir, "nested", "service.db")
      const result = yield* roundTrip(`file:${file}`)
      expect(existsSync(file)).toBe(true)
      expect(result.rows).toEqual([{ note: "kept" }])
      expect(result.migrations).toBeGreaterThanOrEqual(0)
    }))

  it.scoped.skipIf(!postgresAvailable)(
    "Postgres: migrates and keeps data across restarts",
    () =>
      Effect.gen(function*() {
        const url = yield* freshPostgresDatabase
        const result = yield* roundTrip(url)
        expect(result.rows).toEqual([{ note: "kept" }])
      })
  )

  it.effect("an unreachable Postgres is a StorageError naming the cause, not a hang", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(DatabaseLive("postgres://nobody@127.0.0.1:1/none"))))
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) expect(String(exit.cause)).toMatch(/StorageError.*Storage unavailable: .*ECONNREFUSED/s)
    }), 20_000)
})
