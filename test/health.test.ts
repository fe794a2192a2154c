import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import type { AuthSettings } from "../src/config/AuthSettings.js"
import { serviceMigrations } from "../src/Database.js"
import { Lifecycle } from "../src/health/Lifecycle.js"
import { latestMigrationId as latestOf } from "../src/storage/Migrations.js"
import { postgresAvailable, PostgresTestServerLive } from "./support/postgres.js"
import { fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

const service = <I, S>(tag: Context.Tag<I, S>) =>
  Effect.map(TestServer, (server) => Context.unsafeGet(server.services as Context.Context<I>, tag))

const defaultPrivateJwt: AuthSettings = {
  production: false,
  jwt: { secret: Redacted.make("a-long-shared-secret-for-tests-only"), defaultPrivate: true, publicRoutes: [] }
}

describe("GET /health and GET /ready", () => {
  it.scopedLive("a fresh service is up and ready, and names its instance", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect(yield* fetchJson(`${url}/health`)).toMatchObject({
        status: 200,
        body: { success: true, data: { status: "up", instanceId: "probe-test" } }
      })
      expect(yield* fetchJson(`${url}/ready`)).toMatchObject({
        status: 200,
        body: { success: true, data: { status: "ready", instanceId: "probe-test" } }
      })
    }).pipe(Effect.provide(TestServerLive({ config: { instanceId: "probe-test" } }))))

  it.scopedLive("draining: /ready is 503 with the envelope and the reason, /health stays 200", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const lifecycle = yield* service(Lifecycle)
      yield* lifecycle.beginDraining
      expect(yield* fetchJson(`${url}/ready`)).toMatchObject({
        status: 503,
        body: { success: false, error: "Instance is draining (shutting down)" }
      })
      expect((yield* fetchJson(`${url}/health`)).status).toBe(200)
    }).pipe(Effect.provide(TestServerLive())))

  it.live("the service starts draining when its scope begins to close (SIGTERM closes it)", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(TestServerLive(), scope)
      const lifecycle = Context.unsafeGet(
        Context.get(context, TestServer).services as Context.Context<Lifecycle>,
        Lifecycle
      )
      expect(yield* lifecycle.draining).toBe(false)
      yield* Scope.close(scope, Exit.void)
      expect(yield* lifecycle.draining).toBe(true)
    }))

  it.scopedLive("a store whose migrations are behind this build's is not ready", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const sql = yield* service(SqlClient.SqlClient)
      yield* sql`DELETE FROM effect_sql_migrations WHERE migration_id = ${latestOf(serviceMigrations)}`
      expect(yield* fetchJson(`${url}/ready`)).toMatchObject({
        status: 503,
        body: { success: false, error: expect.stringMatching(/^Migrations not done: \d+ of \d+ applied$/) }
      })
    }).pipe(Effect.provide(TestServerLive())))

  it.scopedLive("with JWT and defaultPrivate both stay public (no token, or a bad one)", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect((yield* fetchJson(`${url}/tools`)).status).toBe(401)
      for (const path of ["/health", "/ready"]) {
        expect((yield* fetchJson(`${url}${path}`)).status).toBe(200)
        expect((yield* fetchJson(`${url}${path}`, { headers: { authorization: "Bearer not-a-token" } })).status).toBe(
          200
        )
      }
    }).pipe(Effect.provide(TestServerLive({ config: { auth: defaultPrivateJwt } }))))

  it.scopedLive("the OpenAPI document lists both, public even under defaultPrivate, with the 503 of /ready", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const { paths } = (yield* fetchJson(`${url}/doc`)).body
      expect(paths["/health"].get).toMatchObject({ operationId: "health.health", security: [] })
      expect(paths["/health"].get.responses["200"]).toBeDefined()
      expect(paths["/ready"].get).toMatchObject({ operationId: "health.ready", security: [] })
      expect(paths["/ready"].get.responses["503"].content["application/json"].schema).toEqual({
        $ref: "#/components/schemas/ServiceUnavailable"
      })
    }).pipe(
      Effect.provide(
        TestServerLive({
          config: { auth: { ...defaultPrivateJwt, jwt: { ...defaultPrivateJwt.jwt!, publicRoutes: ["GET /doc"] } } }
        })
      )
    ))

  it.scopedLive("a probe is one span (its request), not one per statement", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      for (let i = 0; i < 3; i++) expect((yield* fetchJson(`${url}/ready`)).status).toBe(200)
      const { traces } = (yield* fetchJson(`${url}/observability/traces?limit=500`)).body.data
      const requests = traces.filter((trace: { name: string }) => trace.name === "GET /ready")
      expect(requests.map((trace: { spanCount: number }) => trace.spanCount)).toEqual([1, 1, 1])
    }).pipe(Effect.provide(TestServerLive())))
})

describe.skipIf(!postgresAvailable)("GET /ready on Postgres", () => {
  it.scopedLive(
    "a store that does not answer within 2 s is not ready (503 after about 2 s); ready again once it answers",
    () =>
      Effect.gen(function*() {
        const { url, config } = yield* TestServer
        expect(Redacted.value(config.databaseUrl)).toMatch(/^postgres/)
        expect((yield* fetchJson(`${url}/ready`)).status).toBe(200)
        // Another session holds the table the probe reads: to the probe the store stops answering.
        const sql = yield* PgClient.PgClient
        const holder = yield* sql.reserve
        yield* holder.executeUnprepared("BEGIN", [], undefined)
        yield* holder.executeUnprepared("LOCK TABLE effect_sql_migrations IN ACCESS EXCLUSIVE MODE", [], undefined)
        const started = Date.now()
        expect(yield* fetchJson(`${url}/ready`)).toMatchObject({
          status: 503,
          body: { success: false, error: "Store did not answer within 2s" }
        })
        const waited = Date.now() - started
        expect(waited).toBeGreaterThanOrEqual(1900)
        expect(waited).toBeLessThan(10_000)
        yield* holder.executeUnprepared("ROLLBACK", [], undefined)
        expect((yield* fetchJson(`${url}/ready`)).status).toBe(200)
      }).pipe(
        Effect.provide(Layer.unwrapEffect(Effect.map(TestServer, ({ config }) =>
          PgClient.layer({ url: config.databaseUrl, maxConnections: 1 })))),
        Effect.provide(PostgresTestServerLive())
      ),
    60_000
  )
})
