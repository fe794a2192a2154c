import { describe, layer } from "@effect/vitest"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { app, races } from "./support/workflowRaces.js"

/** The races of test/support/workflowRaces.ts on Postgres (row locks, concurrent connections). */
describe.skipIf(!postgresAvailable)("workflow races on Postgres", () => {
  layer(PostgresTestServerLive({ app }), { excludeTestServices: true })("DATABASE_URL=postgres://...", (it) => {
    races("postgres")(it)
  })
})
