import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { Socket } from "node:net"
import { TestServerLive, type TestServerOptions } from "./TestServer.js"

/** Where the tests find Postgres: TEST_DATABASE_URL, or the local server with trust auth. */
export const POSTGRES_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"

const reachable = (url: string): Promise<boolean> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(url)
    const socket = new Socket()
    socket.setTimeout(1000)
    socket.once("connect", () => (socket.destroy(), resolve(true)))
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => (socket.destroy(), resolve(false)))
    socket.connect(Number(port || 5432), hostname)
  })

/** Checked once per test file; tests that need Postgres skip with this reason when it is false. */
export const postgresAvailable = await reachable(POSTGRES_URL)
if (!postgresAvailable) {
  console.warn(`SKIPPED Postgres tests: nothing accepts connections at ${POSTGRES_URL} (set TEST_DATABASE_URL)`)
}

const admin = (statement: string) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    yield* sql.unsafe(statement)
  }).pipe(
    Effect.scoped,
    Effect.provide(PgClient.layer({ url: Redacted.make(POSTGRES_URL), maxConnections: 1 })),
    Effect.orDie
  )

/** A fresh database for one test, dropped afterwards; yields its URL. */
export const freshPostgresDatabase = Effect.acquireRelease(
  Effect.suspend(() => {
    const name = `svc_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
    return Effect.as(admin(`CREATE DATABASE ${name}`), name)
  }),
  (name) => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
).pipe(Effect.map((name) => {
  const url = new URL(POSTGRES_URL)
  url.pathname = `/${name}`
  return url.toString()
}))

/** The test server on a fresh Postgres database of its own, dropped with the layer. */
export const PostgresTestServerLive = (options: TestServerOptions = {}) =>
  Layer.unwrapScoped(
    Effect.map(freshPostgresDatabase, (databaseUrl) =>
      TestServerLive({ ...options, config: { ...options.config, databaseUrl: Redacted.make(databaseUrl) } }))
  )
