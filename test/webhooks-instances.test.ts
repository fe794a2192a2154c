import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { join } from "node:path"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually, makeReceiver, webhooksApp, webhookTestConfig } from "./support/webhooks.js"

/**
 * Completion callbacks on two instances of one database (issue #33, settled 12: SQLite one file,
 * Postgres two instances): a receiver failing the first deliveries; every delivery ends delivered,
 * and each attempt is sent once, by whichever instance claimed it (sends per delivery = its attempts).
 */

const backends = [
  { name: "SQLite", skip: false, url: Effect.map(tempDir, (dir) => `file:${join(dir, "hooks.db")}`) },
  { name: "Postgres", skip: !postgresAvailable, url: freshPostgresDatabase }
] as const

const startInstance = (databaseUrl: string, instanceId: string) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const config = { ...webhookTestConfig(), instanceId, databaseUrl: Redacted.make(databaseUrl) }
    const context = yield* Layer.buildWithScope(TestServerLive({ app: webhooksApp, config }), scope)
    const server = Context.get(context, TestServer)
    return { server, stop: Scope.close(scope, Exit.void), sql: Context.get(server.services, SqlClient.SqlClient) }
  })

const EXECUTIONS = 20

for (const backend of backends) {
  describe.skipIf(backend.skip)(`webhooks on two instances (${backend.name})`, () => {
    it.scopedLive(
      "a receiver failing the first deliveries: each ends delivered, each attempt sent once",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const a = yield* startInstance(url, "hooks-a")
          const b = yield* startInstance(url, "hooks-b")
          const receiver = yield* makeReceiver([500, 500, 503, 500])
          yield* fetchJson(`${a.server.url}/webhooks/secret`, json({}))
          const hook = { webhook: { url: `https://127.0.0.1:${receiver.port}/both` } }
          yield* Effect.forEach(Array.from({ length: EXECUTIONS }, (_, i) => i), (i) =>
            fetchJson(
              `${(i % 2 === 0 ? a : b).server.url}/workflows/echo/run`,
              json({ input: { text: `${i}` }, options: hook })
            ), { concurrency: 4 })
          const rows = yield* eventually(
            Effect.orDie(
              a.sql<
                { id: string; status: string; attempts: number | string }
              >`SELECT id, status, attempts FROM webhook_deliveries`
            ),
            (rows) => rows.length === EXECUTIONS && rows.every((row) => row.status === "delivered"),
            "every delivery delivered",
            60_000
          )
          const sends = new Map<string, number>()
          for (const received of receiver.received) {
            sends.set(
              String(received.headers["webhook-id"]),
              (sends.get(String(received.headers["webhook-id"])) ?? 0) + 1
            )
          }
          for (const row of rows) {
            expect(sends.get(row.id), row.id).toBe(Number(row.attempts))
          }
          expect(receiver.received).toHaveLength(EXECUTIONS + 4)
          yield* a.stop
          yield* b.stop
        }),
      120_000
    )
  })
}
