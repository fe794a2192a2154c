import type { SqlClient } from "@effect/sql"
import { Context, type Effect } from "effect"

/** One schema change. It runs once per database and must work on SQLite and Postgres (`sql.onDialectOrElse`). */
export type Migration = Effect.Effect<void, unknown, SqlClient.SqlClient>

/**
 * Every schema change of the service's database, by name (`"0007_what_it_does"`, the number first), as the
 * composition root assembles them from the features that own them (src/Database.ts). Never edit a
 * released one: add another.
 */
export class Migrations extends Context.Tag("Migrations")<Migrations, Readonly<Record<string, Migration>>>() {}

/** The id of the newest migration (the number its name starts with). */
export const latestMigrationId = (migrations: Readonly<Record<string, Migration>>): number =>
  Math.max(0, ...Object.keys(migrations).map((name) => Number.parseInt(name, 10)))
