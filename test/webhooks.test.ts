import { SqlClient } from "@effect/sql"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Redacted } from "effect"
import { createHmac } from "node:crypto"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { defaultWebhookSettings, type WebhookSettings } from "../src/config/WebhookSettings.js"
import { payloadOf } from "../src/webhooks/WebhookOutbox.js"
import { backoffAfter } from "../src/webhooks/Webhooks.js"
import { sign } from "../src/webhooks/WebhookSignature.js"
import { checkWebhookUrl, isPrivateAddress, pickAddress, redactUrl } from "../src/webhooks/WebhookUrls.js"
import { fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"
import {
  eventually,
  makeReceiver,
  type Received,
  RECEIVER_PORTS,
  receiverHosts,
  webhooksApp,
  webhookTestConfig
} from "./support/webhooks.js"

/**
 * Completion callbacks (issue #33 item 2, settled 7, 8, 9): the Standard Webhooks signature, the URL
 * checks, and deliveries over https to a local receiver from the durable outbox, on SQLite.
 */

const settings = {
  ...defaultWebhookSettings,
  allowedHosts: ["hooks.example.com", "hooks.example.com:8443", "127.0.0.1", "127.0.0.1:8443"]
}

/** Whether one of a delivery's signatures is `secret`'s. */
const verifies = (received: Received, secret: string) => {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  const signed = `${received.headers["webhook-id"]}.${received.headers["webhook-timestamp"]}.${received.body}`
  const expected = `v1,${createHmac("sha256", key).update(signed).digest("base64")}`
  return String(received.headers["webhook-signature"]).split(" ").includes(expected)
}

const deliveriesOf = (url: string, workflowId: string, executionId: string, init?: RequestInit) =>
  Effect.map(
    fetchJson(`${url}/workflows/${workflowId}/executions/${executionId}/webhooks`, init),
    (r) => r.body.data?.deliveries as Array<any>
  )

describe("webhook signature and URL checks", () => {
  it("signs as the Standard Webhooks test vector", () => {
    expect(
      sign(
        Redacted.make("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        "msg_p5jXN8AQM9LWM0D4loKWxJek",
        1614265330,
        "{\"test\": 2432232314}"
      )
    )
      .toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
  })

  it("refuses a URL that is not https, not listed, or given while callbacks are off, naming the reason", () => {
    const problem = (url: string, s: WebhookSettings = settings) => {
      const checked = checkWebhookUrl(url, s)
      return "problem" in checked ? checked.problem : undefined
    }
    expect(problem("not a url")).toContain("not an absolute URL")
    expect(problem("http://hooks.example.com/x")).toContain("must be https")
    expect(problem("https://evil.example.com/x")).toContain("host evil.example.com is not in webhooks.allowedHosts")
    expect(problem("https://169.254.169.254/latest")).toContain("not in webhooks.allowedHosts")
    expect(problem("https://hooks.example.com/x", defaultWebhookSettings)).toContain("callbacks are off")
    expect(problem("https://HOOKS.example.com:8443/x?token=1")).toBeUndefined()
    expect(problem("https://127.0.0.1:8443/x")).toBeUndefined()
  })

  it("refuses private, loopback, link-local and metadata addresses unless the address is listed", () => {
    for (
      const address of [
        "10.1.2.3",
        "127.0.0.1",
        "169.254.169.254",
        "172.16.0.1",
        "192.168.1.1",
        "::1",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:127.0.0.1",
        "0.0.0.0",
        "100.64.0.1"
      ]
    ) {
      expect(isPrivateAddress(address), address).toBe(true)
    }
    for (const address of ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"]) {
      expect(isPrivateAddress(address), address).toBe(false)
    }
    expect(pickAddress("hooks.example.com", 443, [{ address: "10.0.0.5", family: 4 }], settings)).toMatchObject({
      problem: expect.stringContaining("not a public address")
    })
    expect(
      pickAddress("hooks.example.com", 443, [{ address: "10.0.0.5", family: 4 }, {
        address: "93.184.216.34",
        family: 4
      }], settings)
    )
      .toEqual({ address: "93.184.216.34", family: 4 })
    expect(pickAddress("127.0.0.1", 443, [{ address: "127.0.0.1", family: 4 }], settings)).toEqual({
      address: "127.0.0.1",
      family: 4
    })
    expect(pickAddress("hooks.example.com", 443, [], settings)).toMatchObject({
      problem: expect.stringContaining("did not resolve")
    })
  })

  it("cuts a result over the cap so that the whole body stays under it, escapes included", () => {
    const event = {
      type: "workflow-complete",
      executionId: "e",
      from: "w",
      timestamp: "2026-01-01T00:00:00.000Z",
      status: "success"
    } as const
    for (const output of [{ quotes: "\"".repeat(20_000) }, { text: "é".repeat(20_000) }, ["\u0001".repeat(9_000)]]) {
      const made = payloadOf({ ...event, output }, 8192)!
      expect(made.truncated).toBe(true)
      const body = JSON.stringify({
        ...made.payload,
        data: { executionId: "x".repeat(128), workflowId: "y".repeat(128), ...made.payload.data }
      })
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(8192)
      expect(JSON.stringify(output).startsWith(made.payload.data.result as string)).toBe(true)
      expect((made.payload.data.result as string).length).toBeGreaterThan(1000)
    }
    expect(payloadOf({ ...event, output: { small: true } }, 8192)).toEqual({
      truncated: false,
      payload: {
        type: "execution.completed",
        timestamp: event.timestamp,
        data: { status: "completed", result: { small: true } }
      }
    })
    expect(payloadOf({ ...event, type: "step-start" }, 8192)).toBeUndefined()
  })

  it("redacts userinfo and query; backs off from 1 s doubling to 1 h", () => {
    expect(redactUrl("https://user:pw@hooks.example.com/a/b?token=secret")).toBe(
      "https://hooks.example.com/a/b?redacted"
    )
    expect(redactUrl("https://hooks.example.com/a")).toBe("https://hooks.example.com/a")
    expect([1, 2, 3, 4].map((n) => backoffAfter(defaultWebhookSettings, n))).toEqual([1000, 2000, 4000, 8000])
    expect(backoffAfter(defaultWebhookSettings, 30)).toBe(3600 * 1000)
  })

  it("reads its settings from the config file and the environment, with no callbacks by default", () => {
    expect(resolveServerConfig({}, {}).webhooks).toMatchObject({
      allowedHosts: [],
      retryWindowMs: 24 * 3600 * 1000,
      payloadMaxBytes: 256 * 1024,
      maxPendingPerOwner: 10_000
    })
    const config = resolveServerConfig({ webhooks: { allowedHosts: ["A.example.com"], maxPendingPerOwner: 5 } }, {
      WEBHOOK_SYSTEM_SECRET: "whsec_c2VjcmV0c2VjcmV0c2VjcmV0"
    })
    expect(config.webhooks?.allowedHosts).toEqual(["a.example.com"])
    expect(config.webhooks?.maxPendingPerOwner).toBe(5)
    expect(resolveServerConfig({}, { WEBHOOK_ALLOWED_HOSTS: "x.example.com, Y.example.com" }).webhooks?.allowedHosts)
      .toEqual(["x.example.com", "y.example.com"])
    expect(() => resolveServerConfig({}, { WEBHOOK_CA_FILE: "/nonexistent/ca.pem" })).toThrow(/caFile/)
    expect(Redacted.value(config.webhooks!.systemSecret!)).toBe("whsec_c2VjcmV0c2VjcmV0c2VjcmV0")
    expect(String(config.webhooks?.systemSecret)).not.toContain("c2VjcmV0")
    // Too short, from either source: refused without printing it.
    for (
      const refused of [
        () => resolveServerConfig({ webhooks: { systemSecret: "short-Z9q" } }, {}),
        () => resolveServerConfig({}, { WEBHOOK_SYSTEM_SECRET: "short-Z9q" })
      ]
    ) {
      expect(refused).toThrow(/at least 16 characters/)
      expect(refused).not.toThrow(/Z9q/)
    }
  })
})

describe("webhooks with the default settings", () => {
  layer(TestServerLive({ app: webhooksApp }), { excludeTestServices: true })("no callbacks at all", (it) => {
    it.effect("execute, run and stream with a webhook are 400 at request time, and nothing connects out", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* TestServer
        const receiver = yield* makeReceiver()
        const hook = `https://127.0.0.1:${receiver.port}/hook`
        yield* fetchJson(`${url}/webhooks/secret`, json({}))
        for (const route of ["execute", "run", "stream"]) {
          const answer = yield* fetchJson(
            `${url}/workflows/echo/${route}`,
            json({ input: { text: "hi" }, options: { webhook: { url: hook } } })
          )
          expect(answer.status, route).toBe(400)
          expect(answer.body.error, route).toContain("callbacks are off")
        }
        const done = yield* fetchJson(`${url}/workflows/echo/execute`, json({ input: { text: "hi" } }))
        expect(done.body.data.status).toBe("completed")
        yield* Effect.sleep("500 millis")
        expect(receiver.connections()).toBe(0)
        expect(yield* deliveriesOf(url, "echo", done.body.data.executionId)).toEqual([])
      })))
  })
})

describe("webhook deliveries", () => {
  layer(TestServerLive({ app: webhooksApp, config: webhookTestConfig() }), { excludeTestServices: true })(
    "to a local https receiver",
    (it) => {
      it.effect("a URL that is not https or not listed is a 400 naming the reason; so is one given before a secret exists", () =>
        Effect.gen(function*() {
          const { url } = yield* TestServer
          const start = (hook: string) =>
            fetchJson(`${url}/workflows/echo/run`, json({ input: { text: "x" }, options: { webhook: { url: hook } } }))
          const noSecret = yield* start(`https://127.0.0.1:${RECEIVER_PORTS[0]}/hook`)
          expect(noSecret.status).toBe(400)
          expect(noSecret.body.error).toContain("POST /webhooks/secret")
          const garbled = yield* fetchJson(`${url}/webhooks/secret`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "{nope"
          })
          expect(garbled.status).toBe(400)
          const empty = yield* fetchJson(`${url}/webhooks/secret`, { method: "POST" })
          expect(empty.status).toBe(201)
          const made = yield* fetchJson(`${url}/webhooks/secret`, json({}))
          expect(made.status).toBe(201)
          expect(made.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
          const http = yield* start("http://127.0.0.1:1/hook")
          expect(http.status).toBe(400)
          expect(http.body.error).toContain("must be https")
          const other = yield* start("https://example.com/hook")
          expect(other.status).toBe(400)
          expect(other.body.error).toContain("host example.com is not in webhooks.allowedHosts")
          const info = yield* fetchJson(`${url}/webhooks/secret`)
          expect(info.status).toBe(200)
          expect(JSON.stringify(info.body)).not.toContain("whsec_")
        }))

      it.effect("a receiver failing twice gets the same delivery a third time, signed, and the row shows 3 attempts, delivered", () =>
        Effect.scoped(Effect.gen(function*() {
          const { url } = yield* TestServer
          const secret = (yield* fetchJson(`${url}/webhooks/secret`, json({}))).body.data.secret as string
          const receiver = yield* makeReceiver([500, 500])
          const hook = `https://127.0.0.1:${receiver.port}/hook?token=abc`
          const done = yield* fetchJson(
            `${url}/workflows/echo/execute`,
            json({ input: { text: "hello" }, options: { webhook: { url: hook } } })
          )
          expect(done.body.data.status).toBe("completed")
          const executionId = done.body.data.executionId
          const listed = yield* eventually(
            deliveriesOf(url, "echo", executionId),
            (d) => d.length === 1 && d[0].status === "delivered",
            "delivered"
          )
          expect(listed[0]).toMatchObject({
            attempts: 3,
            status: "delivered",
            lastStatusCode: 200,
            event: "execution.completed",
            url: `https://127.0.0.1:${receiver.port}/hook?redacted`
          })
          expect(receiver.received).toHaveLength(3)
          expect(
            new Set(receiver.received.map((r) => r.headers["webhook-id"]))
          ).toEqual(new Set([listed[0].id]))
          expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1)
          for (const received of receiver.received) {
            expect(verifies(received, secret)).toBe(true)
            expect(received.path).toBe("/hook?token=abc")
            expect(Math.abs(Number(received.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(60)
          }
          expect(JSON.parse(receiver.received[0].body)).toMatchObject({
            type: "execution.completed",
            data: { executionId, workflowId: "echo", status: "completed", result: { text: "hello" } }
          })
          // Not in the execution's record or events; each attempt a webhook.deliver span; counted by outcome.
          const record = yield* fetchJson(`${url}/workflows/executions/${executionId}`)
          expect(JSON.stringify(record.body)).not.toContain("token=abc")
          const events = yield* fetchJson(`${url}/workflows/echo/executions/${executionId}/events`)
          expect(JSON.stringify(events.body)).not.toMatch(/webhook/i)
          const traces = yield* eventually(
            Effect.map(
              fetchJson(`${url}/observability/traces?limit=200`),
              (r) => (r.body.data.traces as Array<any>).filter((t) => t.name === "webhook.deliver")
            ),
            (found) => found.length >= 3,
            "three webhook.deliver traces"
          )
          expect(JSON.stringify(traces)).not.toContain("token=abc")
          const [span] = (yield* fetchJson(`${url}/observability/traces/${traces[0].traceId}`)).body.data
            .spans as Array<any>
          expect(span).toMatchObject({ name: "webhook.deliver", kind: "client" })
          expect(span.attributes).toMatchObject({
            "url.full": `https://127.0.0.1:${receiver.port}/hook?redacted`,
            "webhook.delivery_id": listed[0].id
          })
          expect(JSON.stringify(span)).not.toContain("token=abc")
          const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((response) => response.text()))
          // Counters are the process's: other test files in this worker may have counted before (at least, not exactly).
          const counted = (outcome: string) =>
            Number(
              new RegExp(`^webhook_deliveries_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`, "m").exec(metrics)?.[1]
            )
          expect(counted("delivered")).toBeGreaterThanOrEqual(1)
          expect(counted("retry")).toBeGreaterThanOrEqual(2)
        })))

      it.effect("a suspension is delivered too; rotating the secret signs with both during the grace", () =>
        Effect.scoped(Effect.gen(function*() {
          const { url } = yield* TestServer
          const first = (yield* fetchJson(`${url}/webhooks/secret`, json({}))).body.data.secret as string
          const rotated = yield* fetchJson(`${url}/webhooks/secret`, json({}))
          const second = rotated.body.data.secret as string
          expect(second).not.toBe(first)
          expect(Date.parse(rotated.body.data.previousValidUntil)).toBeGreaterThan(Date.now() + 23 * 3600 * 1000)
          const receiver = yield* makeReceiver()
          const started = yield* fetchJson(
            `${url}/workflows/waiter/execute`,
            json({ input: {}, options: { webhook: { url: `https://127.0.0.1:${receiver.port}/w` } } })
          )
          expect(started.body.data.status).toBe("suspended")
          const [received] = yield* eventually(
            Effect.succeed(receiver.received),
            (r) => r.length === 1,
            "the suspension's delivery"
          )
          expect(String(received.headers["webhook-signature"]).split(" ")).toHaveLength(2)
          expect(verifies(received, first)).toBe(true)
          expect(verifies(received, second)).toBe(true)
          expect(JSON.parse(received.body)).toMatchObject({
            type: "execution.suspended",
            data: { status: "suspended", reason: "a decision is needed", suspensionData: { asked: true } }
          })
          const executionId = started.body.data.executionId
          yield* fetchJson(
            `${url}/workflows/waiter/executions/${executionId}/resume`,
            json({ resumeData: { ok: true } })
          )
          yield* eventually(Effect.succeed(receiver.received), (r) => r.length === 2, "the completion's delivery")
          const deliveries = yield* eventually(
            deliveriesOf(url, "waiter", executionId),
            (d) => d.every((x) => x.status === "delivered") && d.length === 2,
            "both delivered"
          )
          expect(deliveries.map((d) => d.event)).toEqual(["execution.suspended", "execution.completed"])
          expect(deliveries[0].id).not.toBe(deliveries[1].id)
        })))

      it.effect("the list is 404 for an unknown execution; deleting the execution deletes its deliveries", () =>
        Effect.scoped(Effect.gen(function*() {
          const { url } = yield* TestServer
          yield* fetchJson(`${url}/webhooks/secret`, json({}))
          expect((yield* fetchJson(`${url}/workflows/echo/executions/nope/webhooks`)).status).toBe(404)
          const receiver = yield* makeReceiver()
          const done = yield* fetchJson(
            `${url}/workflows/echo/execute`,
            json({ input: { text: "x" }, options: { webhook: { url: `https://127.0.0.1:${receiver.port}/` } } })
          )
          const executionId = done.body.data.executionId
          yield* eventually(
            deliveriesOf(url, "echo", executionId),
            (d) => d.length === 1 && d[0].status === "delivered",
            "delivered"
          )
          expect(
            (yield* fetchJson(`${url}/workflows/echo/executions/${executionId}/webhooks`.replace("/echo/", "/waiter/")))
              .status
          ).toBe(404)
          const deleted = yield* fetchJson(`${url}/workflows/echo/executions/${executionId}`, { method: "DELETE" })
          expect(deleted.status).toBe(200)
          expect((yield* fetchJson(`${url}/workflows/echo/executions/${executionId}/webhooks`)).status).toBe(404)
          const sql = Context.get((yield* TestServer).services, SqlClient.SqlClient)
          expect(yield* Effect.orDie(sql`SELECT id FROM webhook_deliveries WHERE execution_id = ${executionId}`))
            .toEqual([])
        })))

      it.effect("no request acts as a code schedule's system owner (its callbacks are signed with the system secret)", () =>
        Effect.scoped(Effect.gen(function*() {
          const { url } = yield* TestServer
          yield* fetchJson(`${url}/webhooks/secret`, json({}))
          const receiver = yield* makeReceiver()
          for (const route of ["execute", "run", "stream"]) {
            const spoofed = yield* fetchJson(
              `${url}/workflows/echo/${route}`,
              json({
                input: { text: "signed by the system?" },
                options: {
                  userId: "system:schedule/code.echo.default",
                  webhook: { url: `https://127.0.0.1:${receiver.port}/` }
                }
              })
            )
            expect(spoofed.status).toBe(403)
            expect(spoofed.body.error).toContain(`cannot act as a user whose id starts with "system:"`)
          }
          expect(receiver.connections()).toBe(0)
        })))
    }
  )
})

describe("webhook delivery checks", () => {
  layer(TestServerLive({ app: webhooksApp, config: webhookTestConfig({ allowedHosts: receiverHosts("localhost") }) }), {
    excludeTestServices: true
  })("a listed name resolving to loopback", (it) => {
    it.effect("passes the request's check, then is refused at delivery: the address it resolves to is not listed", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* fetchJson(`${url}/webhooks/secret`, json({}))
        const receiver = yield* makeReceiver()
        const done = yield* fetchJson(
          `${url}/workflows/echo/execute`,
          json({ input: { text: "x" }, options: { webhook: { url: `https://localhost:${receiver.port}/` } } })
        )
        expect(done.status).toBe(200)
        const [delivery] = yield* eventually(
          deliveriesOf(url, "echo", done.body.data.executionId),
          (d) => d[0]?.status === "failed",
          "refused"
        )
        expect(delivery.lastError).toBe("refused: not a public address")
        expect(delivery.attempts).toBe(1)
        expect(receiver.connections()).toBe(0)
      })))
  })

  layer(
    TestServerLive({
      app: webhooksApp,
      config: webhookTestConfig({ allowedHosts: receiverHosts("localhost", "127.0.0.1") })
    }),
    { excludeTestServices: true }
  )("a name and its address listed", (it) => {
    it.effect("connects to the resolved address with the name's TLS check; a redirect is a failed attempt, not followed", () =>
      Effect.scoped(Effect.gen(function*() {
        const { url } = yield* TestServer
        yield* fetchJson(`${url}/webhooks/secret`, json({}))
        const receiver = yield* makeReceiver([302])
        const done = yield* fetchJson(
          `${url}/workflows/echo/execute`,
          json({ input: { text: "x" }, options: { webhook: { url: `https://localhost:${receiver.port}/r` } } })
        )
        const [delivery] = yield* eventually(
          deliveriesOf(url, "echo", done.body.data.executionId),
          (d) => d[0]?.status === "delivered",
          "delivered"
        )
        expect(delivery.attempts).toBe(2)
        expect(receiver.received.map((r) => r.path)).toEqual(["/r", "/r"])
      })))
  })
})
