import { describe, expect, it, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import WebSocket from "ws"
import { makeAuthPolicy } from "../src/auth/AuthPolicy.js"
import type { AuthSettings } from "../src/config/AuthSettings.js"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { startupBanner } from "../src/server/StartupBanner.js"
import { consoleJson, fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

const SECRET = "a-long-shared-secret-for-tests-only"
const KEY = "console-key-for-tests"
const jwt: AuthSettings["jwt"] = { secret: Redacted.make(SECRET), defaultPrivate: false, publicRoutes: [] }

/** Opens a WebSocket and resolves with "open" or the status of the refused handshake. */
const handshake = (url: string) =>
  Effect.promise(() =>
    new Promise<number | "open">((resolve) => {
      const socket = new WebSocket(url)
      socket.on("open", () => {
        resolve("open")
        socket.close()
      })
      socket.on("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0))
      socket.on("error", () => {})
    })
  )

const CONSOLE_READS = ["/api/logs", "/observability/status", "/observability/traces", "/updates"]

describe("console access outside production", () => {
  const outcome = (settings: AuthSettings, host: string, key?: string) =>
    Effect.runPromise(Effect.either(Effect.flatMap(makeAuthPolicy(settings, host), (policy) =>
      policy.authorize({
        routeClass: "console",
        method: "GET",
        path: "/api/logs",
        token: Option.none(),
        consoleKey: Option.fromNullable(key)
      })))).then((e) => (e._tag === "Right" ? "ok" : e.left.message))

  it("is open on loopback only; on any other address it needs the key, and is closed without one", async () => {
    for (const host of ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"]) {
      expect(await outcome({ production: false, jwt }, host), host).toBe("ok")
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.5", "my-box.lan"]) {
      expect(await outcome({ production: false, jwt }, host), host).toMatch(
        /^Console access is disabled: .*SERVICE_CONSOLE_ACCESS_KEY/
      )
      expect(await outcome({ production: false }, host), host).toMatch(/^Console access is disabled/)
      const keyed: AuthSettings = { production: false, jwt, consoleKey: Redacted.make(KEY) }
      expect(await outcome(keyed, host)).toBe("Console access key required")
      expect(await outcome(keyed, host, "wrong")).toBe("Invalid console access key")
      expect(await outcome(keyed, host, KEY)).toBe("ok")
    }
  })

  it("the banner says which", () => {
    const banner = (host: string, env: Record<string, string> = {}) =>
      startupBanner(resolveServerConfig({ host }, env), "http://x:1")
    expect(banner("127.0.0.1")).toContain("console routes open (not production, loopback)")
    expect(banner("0.0.0.0")).toContain(
      "console routes closed (0.0.0.0 is not loopback and SERVICE_CONSOLE_ACCESS_KEY is not set)"
    )
    expect(banner("0.0.0.0", { SERVICE_CONSOLE_ACCESS_KEY: KEY })).toContain("console routes need x-console-access-key")
    expect(banner("0.0.0.0", { SERVICE_CONSOLE_ACCESS_KEY: KEY })).not.toContain(KEY)
  })
})

layer(TestServerLive({ config: { host: "0.0.0.0", auth: { production: false, jwt } } }), { excludeTestServices: true })(
  "JWT, NODE_ENV unset, every interface, no console key",
  (it) => {
    it.effect("every console route is closed to a caller with no key: reads, writes and WebSockets", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        for (const path of CONSOLE_READS) {
          const read = yield* fetchJson(`${url}${path}`)
          expect(read.status, path).toBe(401)
          expect(read.body.error, path).toMatch(/^Console access is disabled/)
        }
        const install = yield* fetchJson(`${url}/updates`, consoleJson({ packageName: "effect" }))
        expect(install.status).toBe(401)
        const ws = url.replace("http:", "ws:")
        expect(yield* handshake(`${ws}/ws/logs`)).toBe(401)
        expect(yield* handshake(`${ws}/ws/observability?dev=true`)).toBe(401)
        // Other routes are as before.
        expect((yield* fetchJson(`${url}/agents`)).status).toBe(200)
        const doc = (yield* fetchJson(`${url}/doc`)).body
        expect(doc.paths["/api/logs"].get.security).toEqual([{ consoleKey: [] }])
      }))
  }
)

layer(
  TestServerLive({ config: { host: "0.0.0.0", auth: { production: false, jwt, consoleKey: Redacted.make(KEY) } } }),
  { excludeTestServices: true }
)("JWT, NODE_ENV unset, every interface, a console key", (it) => {
  it.effect("console routes need the key", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      for (const path of CONSOLE_READS.slice(0, 3)) {
        expect((yield* fetchJson(`${url}${path}`)).body.error, path).toBe("Console access key required")
        expect((yield* fetchJson(`${url}${path}`, { headers: { "x-console-access-key": KEY } })).status, path).toBe(200)
      }
      const ws = url.replace("http:", "ws:")
      expect(yield* handshake(`${ws}/ws/logs`)).toBe(401)
      expect(yield* handshake(`${ws}/ws/logs?key=${KEY}`)).toBe("open")
    }))
})
