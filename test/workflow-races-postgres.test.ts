import { describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { TestServerLive } from "./support/TestServer.js"
import { app, races } from "./support/workflowRaces.js"

/** The races of test/support/workflowRaces.ts on Postgres (row locks, concurrent connections). */
const PostgresServer = Layer.unwrapScoped(
  Effect.map(freshPostgresDatabase, (databaseUrl) => TestServerLive({ app, config: { databaseUrl } }))
)

describe.skipIf(!postgresAvailable)("workflow races on Postgres", () => {
  layer(PostgresServer, { excludeTestServices: true })("DATABASE_URL=postgres://...", (it) => {
    races("postgres")(it)
  })
})
