import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SignJWT } from "jose"
import { join } from "node:path"
import { fetchJson, json, tempDir, TestServer, TestServerLive } from "./support/TestServer.js"
import { eventually, makeReceiver, webhooksApp, webhookTestConfig } from "./support/webhooks.js"

/**
 * Completion callbacks' bounds and durability (issue #33, settled 8 and 9): a result over the payload
 * cap is sent cut and flagged, an owner's pending deliveries are bounded, a delivery survives a
 * restart between attempts, and secrets and deliveries are per owner under JWT.
 */

const deliveriesOf = (url: string, workflowId: string, executionId: string, token?: string) =>
  Effect.map(
    fetchJson(
      `${url}/workflows/${workflowId}/executions/${executionId}/webhooks`,
      token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }
    ),
    (r) => ({ status: r.status, deliveries: r.body.data?.deliveries as Array<any> })
  )

describe("webhook bounds", () => {
  layer(
    TestServerLive({
      app: webhooksApp,
      config: webhookTestConfig({ payloadMaxBytes: 4096, maxPendingPerOwner: 2, backoffMs: 3600_000 })
    }),
    {
      excludeTestServices: true
    }
  )("small test settings", (it) => {
    it.effect("a result over webhooks.payloadMaxBytes is sent cut and flagged truncated", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* fetchJson(`${url}/webhooks/secret`, json({}))
        const receiver = yield* makeReceiver()
        const text = "é".repeat(5000)
        const done = yield* fetchJson(
          `${url}/workflows/echo/execute`,
          json({ input: { text }, options: { webhook: { url: `https://127.0.0.1:${receiver.port}/big` } } })
        )
        const [received] = yield* eventually(Effect.succeed(receiver.received), (r) => r.length === 1, "the delivery")
        expect(Buffer.byteLength(received.body)).toBeLessThanOrEqual(4096)
        const body = JSON.parse(received.body)
        expect(body.data.resultTruncated).toBe(true)
        expect(typeof body.data.result).toBe("string")
        expect(JSON.stringify({ text }).startsWith(body.data.result)).toBe(true)
        const listed = yield* eventually(
          deliveriesOf(url, "echo", done.body.data.executionId),
          (r) => r.deliveries[0]?.status === "delivered",
          "delivered"
        )
        expect(listed.deliveries[0].truncated).toBe(true)
        // A small result is sent whole.
        const small = yield* fetchJson(
          `${url}/workflows/echo/execute`,
          json({ input: { text: "a" }, options: { webhook: { url: `https://127.0.0.1:${receiver.port}/small` } } })
        )
        const both = yield* eventually(Effect.succeed(receiver.received), (r) => r.length === 2, "the second delivery")
        expect(JSON.parse(both[1].body).data).toEqual({
          executionId: small.body.data.executionId,
          workflowId: "echo",
          status: "completed",
          result: { text: "a" }
        })
      })))

    it.effect("an owner's pending deliveries are bounded: one more is recorded failed, and never sent", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* TestServer
        const sql = Context.get((yield* TestServer).services, SqlClient.SqlClient)
        yield* fetchJson(`${url}/webhooks/secret`, json({}))
        // Always 500, and the next attempt an hour away: the deliveries stay pending.
        const receiver = yield* makeReceiver(Array.from({ length: 10 }, () => 500))
        const ids: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const done = yield* fetchJson(
            `${url}/workflows/echo/execute`,
            json({ input: { text: `${i}` }, options: { webhook: { url: `https://127.0.0.1:${receiver.port}/` } } })
          )
          ids.push(done.body.data.executionId)
        }
        const third = yield* deliveriesOf(url, "echo", ids[2])
        expect(third.deliveries[0]).toMatchObject({
          status: "failed",
          attempts: 0,
          lastError: "more than 2 deliveries pending for this owner"
        })
        yield* eventually(Effect.succeed(receiver.received), (r) => r.length === 2, "the two first attempts")
        const pending = yield* Effect.orDie(
          sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'`
        )
        expect(Number(pending[0].n)).toBe(2)
        const first = yield* deliveriesOf(url, "echo", ids[0])
        expect(first.deliveries[0]).toMatchObject({
          status: "pending",
          attempts: 1,
          lastStatusCode: 500,
          lastError: "http 500"
        })
        yield* Effect.sleep("300 millis")
        expect(receiver.received).toHaveLength(2)
      })))
  })
})

describe("webhook restarts", () => {
  it.scopedLive(
    "a delivery that failed before a restart is delivered by the next process, under the same id",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const databaseUrl = Redacted.make(`file:${join(dir, "restart.db")}`)
        const receiver = yield* makeReceiver([500])
        const config = { ...webhookTestConfig({ backoffMs: 1500 }), databaseUrl }
        const first = yield* Scope.make()
        const one = Context.get(
          yield* Layer.buildWithScope(TestServerLive({ app: webhooksApp, config }), first),
          TestServer
        )
        yield* fetchJson(`${one.url}/webhooks/secret`, json({}))
        const done = yield* fetchJson(
          `${one.url}/workflows/echo/execute`,
          json({ input: { text: "r" }, options: { webhook: { url: `https://127.0.0.1:${receiver.port}/` } } })
        )
        const executionId = done.body.data.executionId
        yield* eventually(
          deliveriesOf(one.url, "echo", executionId),
          (r) => r.deliveries[0]?.lastStatusCode === 500,
          "the first attempt recorded"
        )
        yield* Scope.close(first, Exit.void)
        expect(receiver.received).toHaveLength(1)
        const second = yield* Scope.make()
        const two = Context.get(
          yield* Layer.buildWithScope(TestServerLive({ app: webhooksApp, config }), second),
          TestServer
        )
        const listed = yield* eventually(
          deliveriesOf(two.url, "echo", executionId),
          (r) => r.deliveries[0]?.status === "delivered",
          "delivered after the restart"
        )
        expect(listed.deliveries[0].attempts).toBe(2)
        expect(receiver.received).toHaveLength(2)
        expect(receiver.received[1].headers["webhook-id"]).toBe(receiver.received[0].headers["webhook-id"])
        expect(receiver.received[1].body).toBe(receiver.received[0].body)
        yield* Scope.close(second, Exit.void)
      }),
    60_000
  )
})

const SECRET = "webhook-test-secret-0123456789abcdef"
const sign = (claims: Record<string, unknown>) =>
  Effect.promise(() =>
    new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).setIssuedAt().setExpirationTime("1h").sign(
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

describe("webhooks per owner", () => {
  layer(TestServerLive({ app: webhooksApp, config: { ...webhookTestConfig(), ...jwt } }), {
    excludeTestServices: true
  })("under JWT", (it) => {
    it.effect("each owner has its own secret; another user's deliveries are 404, an admin sees them", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* TestServer
        const [alice, bob, admin] = yield* Effect.all([
          sign({ sub: "alice" }),
          sign({ sub: "bob" }),
          sign({ sub: "root", roles: ["admin"] })
        ])
        const as = (token: string, init: RequestInit = {}) => ({
          ...init,
          headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` }
        })
        const aliceSecret = (yield* fetchJson(`${url}/webhooks/secret`, as(alice, json({})))).body.data.secret as string
        const none = yield* fetchJson(`${url}/webhooks/secret`, as(bob))
        expect(none.status).toBe(404)
        expect(none.body.error).toContain("POST /webhooks/secret")
        const receiver = yield* makeReceiver()
        const hook = { options: { webhook: { url: `https://127.0.0.1:${receiver.port}/` } } }
        // Bob has no secret yet: his callback is refused; Alice's is signed with hers.
        expect(
          (yield* fetchJson(`${url}/workflows/echo/execute`, as(bob, json({ input: { text: "b" }, ...hook })))).status
        ).toBe(400)
        const bobSecret = (yield* fetchJson(`${url}/webhooks/secret`, as(bob, json({})))).body.data.secret as string
        expect(bobSecret).not.toBe(aliceSecret)
        const done = yield* fetchJson(
          `${url}/workflows/echo/execute`,
          as(alice, json({ input: { text: "a" }, ...hook }))
        )
        const executionId = done.body.data.executionId
        const [received] = yield* eventually(
          Effect.succeed(receiver.received),
          (r) => r.length === 1,
          "Alice's delivery"
        )
        const signatures = String(received.headers["webhook-signature"]).split(" ")
        expect(signatures).toHaveLength(1)
        const { createHmac } = yield* Effect.promise(() => import("node:crypto"))
        const expected = (secret: string) =>
          `v1,${
            createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update(
              `${received.headers["webhook-id"]}.${received.headers["webhook-timestamp"]}.${received.body}`
            ).digest("base64")
          }`
        expect(signatures[0]).toBe(expected(aliceSecret))
        expect(signatures[0]).not.toBe(expected(bobSecret))
        expect((yield* deliveriesOf(url, "echo", executionId, bob)).status).toBe(404)
        const mine = yield* eventually(
          deliveriesOf(url, "echo", executionId, alice),
          (r) => r.deliveries?.[0]?.status === "delivered",
          "delivered"
        )
        expect(mine.status).toBe(200)
        expect((yield* deliveriesOf(url, "echo", executionId, admin)).deliveries).toHaveLength(1)
      })))
  })
})

describe("webhook secret grace", () => {
  layer(TestServerLive({ app: webhooksApp, config: webhookTestConfig({ secretGraceMs: 0 }) }), {
    excludeTestServices: true
  })("no grace", (it) => {
    it.effect("once the grace has passed, only the new secret signs", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* TestServer
        const old = (yield* fetchJson(`${url}/webhooks/secret`, json({}))).body.data.secret as string
        const rotated = (yield* fetchJson(`${url}/webhooks/secret`, json({}))).body.data
        expect(rotated.previousValidUntil).toBeNull()
        const receiver = yield* makeReceiver()
        yield* fetchJson(
          `${url}/workflows/echo/execute`,
          json({ input: { text: "g" }, options: { webhook: { url: `https://127.0.0.1:${receiver.port}/` } } })
        )
        const [received] = yield* eventually(Effect.succeed(receiver.received), (r) => r.length === 1, "the delivery")
        const signatures = String(received.headers["webhook-signature"]).split(" ")
        expect(signatures).toHaveLength(1)
        const { createHmac } = yield* Effect.promise(() => import("node:crypto"))
        const expected = (secret: string) =>
          `v1,${
            createHmac("sha256", Buffer.from(secret.slice(6), "base64")).update(
              `${received.headers["webhook-id"]}.${received.headers["webhook-timestamp"]}.${received.body}`
            ).digest("base64")
          }`
        expect(signatures[0]).toBe(expected(rotated.secret))
        expect(signatures[0]).not.toBe(expected(old))
      })))
  })
})
