import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { join } from "node:path"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { CODE_ID, eventually, firedOf, schedulesApp, testScheduleConfig } from "./support/schedules.js"
import { tempDir, TestServer, TestServerLive } from "./support/TestServer.js"

/**
 * A code schedule firing each second (the test setting) on two instances of one database, in process:
 * one instance stopped and started again in between, the other stopped later. Every fire time from the
 * first to the last has exactly one execution (catchUp "all" fills what no instance fired while one was
 * starting), whichever instance fired it, on SQLite (one file) and Postgres.
 */

const backends = [
  { name: "SQLite", skip: false, url: Effect.map(tempDir, (dir) => `file:${join(dir, "instances.db")}`) },
  { name: "Postgres", skip: !postgresAvailable, url: freshPostgresDatabase }
] as const

const startInstance = (databaseUrl: string, instanceId: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      TestServerLive({
        app: schedulesApp,
        config: { ...testScheduleConfig, instanceId, databaseUrl: Redacted.make(databaseUrl) }
      }),
      scope
    )
    const server = Context.get(context, TestServer)
    return { server, stop: Scope.close(scope, Exit.void), sql: Context.get(server.services, SqlClient.SqlClient) }
  })

const firedBy = (logs: ReadonlyArray<string>) =>
  logs.filter((line) => line.startsWith("workflow started by its schedule")).length
const fireTimes = (rows: ReadonlyArray<{ readonly id: string }>) =>
  rows.map((row) => Date.parse(row.id.slice(`sched:${CODE_ID}:`.length)))

for (const backend of backends) {
  describe.skipIf(backend.skip)(`schedules on two instances (${backend.name})`, () => {
    it.scopedLive(
      "each fire time fires exactly once across two instances, one stopped and restarted, then the other stopped",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const a = yield* startInstance(url, "sched-a")
          let b = yield* startInstance(url, "sched-b")
          yield* Effect.sleep("4 seconds")
          const firstB = b.server.logs
          yield* b.stop
          yield* Effect.sleep("3 seconds")
          b = yield* startInstance(url, "sched-b")
          yield* Effect.sleep("3 seconds")
          const firstA = a.server.logs
          yield* a.stop
          yield* Effect.sleep("3 seconds")
          const rows = yield* eventually(
            firedOf(b.sql, CODE_ID),
            (rows) => rows.length > 0 && rows.every((row) => row.status === "completed"),
            "every fired execution completed"
          )
          yield* b.stop
          expect(
            rows.every((row) => /^sched:code\.tick\.every-second:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/.test(row.id))
          ).toBe(true)
          const times = fireTimes(rows)
          expect(times.length).toBeGreaterThanOrEqual(10)
          // Consecutive seconds, none twice, none missing.
          expect(times).toEqual(times.map((_, i) => times[0] + i * 1000))
          expect(firedBy(firstA) + firedBy(firstB) + firedBy(b.server.logs)).toBe(times.length)
          // Both instances fired some.
          expect(firedBy(firstA)).toBeGreaterThan(0)
          expect(firedBy(firstB) + firedBy(b.server.logs)).toBeGreaterThan(0)
        }),
      90_000
    )
  })
}
