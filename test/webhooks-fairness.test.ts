import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SignJWT } from "jose"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import { makeDeliverySlots } from "../src/webhooks/DeliverySlots.js"
import { makeWebhookStore } from "../src/webhooks/WebhookStore.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually, makeReceiver, webhooksApp, webhookTestConfig } from "./support/webhooks.js"

/**
 * Issue #42 item 4 (settled 9): an owner's share of an instance's delivery slots. One owner's receiver
 * that never answers, with many due deliveries, no longer holds every slot: another owner's callback is
 * delivered promptly; the claim takes due rows round-robin by owner, conditionally, within the share.
 */

const backends = [
  { name: "SQLite", skip: false, url: Effect.map(tempDir, (dir) => `file:${join(dir, "fair.db")}`) },
  { name: "Postgres", skip: !postgresAvailable, url: freshPostgresDatabase }
] as const

const SECRET = "webhook-fairness-secret-0123456789abcdef"
const sign = (sub: string) =>
  Effect.promise(() =>
    new SignJWT({ sub }).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
      new TextEncoder().encode(SECRET)
    )
  )
const jwt = {
  auth: {
    production: false,
    jwt: {
      secret: Redacted.make(SECRET),
      defaultPrivate: false,
      publicRoutes: [],
      admin: { claim: "roles", value: "admin" }
    }
  }
}
const as = (token: string, init: RequestInit = {}) => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` }
})

/** Due deliveries of `owner` to `url`, inserted as the outbox would (oldest first), in one statement. */
const insertDue = (sql: SqlClient.SqlClient, owner: string, url: string, count: number, prefix = owner) =>
  Effect.orDie(sql`INSERT INTO webhook_deliveries ${
    sql.insert(Array.from({ length: count }, (_, i) => {
      const at = new Date(Date.now() - 60_000 + i).toISOString()
      const payload = JSON.stringify({
        type: "execution.completed",
        timestamp: at,
        data: { status: "completed", result: i }
      })
      return {
        id: `whd_${prefix}_${i}`,
        execution_id: `exe_${prefix}_${i}`,
        workflow_id: "echo",
        owner,
        url,
        event: "execution.completed",
        payload,
        truncated: 0,
        status: "pending",
        attempts: 0,
        next_attempt_at: at,
        created_at: at,
        updated_at: at
      }
    }))
  }`)

const STUCK = 200

for (const backend of backends) {
  describe.skipIf(backend.skip)(`webhook slots per owner on ${backend.name}`, () => {
    it.scopedLive(
      `a receiver that never answers, its owner with ${STUCK} due deliveries: another owner's callback is delivered promptly`,
      () =>
        Effect.gen(function*() {
          const databaseUrl = Redacted.make(yield* backend.url)
          const server = yield* Effect.map(
            Layer.build(TestServerLive({ app: webhooksApp, config: { ...webhookTestConfig(), ...jwt, databaseUrl } })),
            (c) => Context.get(c, TestServer)
          )
          const sql = Context.get(server.services, SqlClient.SqlClient)
          const [alice, bob] = yield* Effect.all([sign("alice"), sign("bob")])
          yield* fetchJson(`${server.url}/webhooks/secret`, as(alice, json({})))
          yield* fetchJson(`${server.url}/webhooks/secret`, as(bob, json({})))
          const stuck = yield* makeReceiver([], { answer: false })
          const good = yield* makeReceiver()
          yield* insertDue(sql, "alice", `https://127.0.0.1:${stuck.port}/stuck`, STUCK)
          yield* eventually(Effect.sync(() => stuck.open()), (open) => open >= 8, "alice's attempts in flight")
          const done = yield* fetchJson(
            `${server.url}/workflows/echo/execute`,
            as(bob, json({ input: { text: "b" }, options: { webhook: { url: `https://127.0.0.1:${good.port}/bob` } } }))
          )
          expect(done.body.data.status).toBe("completed")
          const ended = Date.now()
          const [received] = yield* eventually(
            Effect.succeed(good.received),
            (r) => r.length === 1,
            "bob's delivery",
            120_000
          )
          const latency = received.at - ended
          const mostOpen = stuck.mostOpen()
          yield* Effect.logInfo(
            `${backend.name}: bob's callback ${latency} ms after his execution ended; alice's attempts open at most ${mostOpen}`
          )
          expect(latency, "bob's callback latency (ms)").toBeLessThan(5000)
          expect(mostOpen, "alice's attempts in flight at most").toBe(8)
        }),
      180_000
    )

    it.scoped(
      "claims raced by two instances, two claimers each: each owner within its share, every row taken once, every owner served (200 trials)",
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const instance = Effect.gen(function*() {
            const sql = Context.get(yield* Layer.build(DatabaseLive(url)), SqlClient.SqlClient)
            return {
              sql,
              store: yield* Effect.provideService(makeWebhookStore, SqlClient.SqlClient, sql),
              slots: yield* makeDeliverySlots(8, 3)
            }
          })
          const a = yield* instance
          const b = yield* instance
          const small = ["o1", "o2", "o3", "o4"]
          for (let trial = 0; trial < 200; trial++) {
            yield* insertDue(a.sql, "flood", "https://127.0.0.1/", 20, `flood${trial}`)
            for (const owner of small) yield* insertDue(a.sql, owner, "https://127.0.0.1/", 2, `${owner}_${trial}`)
            const claim = (x: typeof a) => x.slots.take((share) => x.store.claimDue(share.limit, 60_000, share))
            const [a1, b1, a2, b2] = yield* Effect.all([claim(a), claim(b), claim(a), claim(b)], { concurrency: 4 })
            const ids = [...a1, ...a2, ...b1, ...b2].map((d) => d.id)
            expect(new Set(ids).size, `trial ${trial}: a row taken twice`).toBe(ids.length)
            for (const [name, taken] of [["a", [...a1, ...a2]], ["b", [...b1, ...b2]]] as const) {
              expect(taken.length, `trial ${trial}: instance ${name} in flight`).toBeLessThanOrEqual(8)
              for (const owner of ["flood", ...small]) {
                expect(taken.filter((d) => d.owner === owner).length, `trial ${trial}: ${owner} on ${name}`)
                  .toBeLessThanOrEqual(3)
              }
            }
            for (const owner of small) {
              expect(ids.some((id) => id.startsWith(`whd_${owner}_${trial}_`)), `trial ${trial}: ${owner} served`).toBe(
                true
              )
            }
            for (const [x, taken] of [[a, [...a1, ...a2]], [b, [...b1, ...b2]]] as const) {
              expect(x.slots.inFlight()).toBe(taken.length)
              yield* Effect.forEach(taken, (d) => x.slots.release(d.owner), { discard: true })
            }
            yield* Effect.orDie(a.sql`DELETE FROM webhook_deliveries`)
          }
        }),
      180_000
    )
  })
}
