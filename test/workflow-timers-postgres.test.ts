import { describe, layer } from "@effect/vitest"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { timerRaces, timersApp } from "./support/timers.js"

/**
 * Durable timers (issue #31) on Postgres, in process: the races of test/support/timers.ts (row locks,
 * the database's clock). Real instances on one database: workflow-timers-instances.test.ts.
 */

describe.skipIf(!postgresAvailable)("durable timers on Postgres", () => {
  layer(PostgresTestServerLive({ app: timersApp }), { excludeTestServices: true })("in process", (it) => {
    timerRaces("postgres")(it)
  })
})
