import { describe, layer } from "@effect/vitest"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { app, retryRaces } from "./support/retryRaces.js"
import { TestServerLive } from "./support/TestServer.js"

/** The retry races of test/support/retryRaces.ts, on SQLite and on Postgres. */
layer(TestServerLive({ app }), { excludeTestServices: true })("retry races on SQLite", (it) => {
  retryRaces("sqlite")(it)
})

describe.skipIf(!postgresAvailable)("retry races on Postgres", () => {
  layer(PostgresTestServerLive({ app }), { excludeTestServices: true })("DATABASE_URL=postgres://...", (it) => {
    retryRaces("postgres")(it)
  })
})
