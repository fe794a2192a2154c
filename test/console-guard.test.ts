import { afterAll, describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type IncomingMessage, request } from "node:http"
import type { AddressInfo } from "node:net"
import { hostname, tmpdir } from "node:os"
import { join } from "node:path"
import { chromium } from "playwright-core"
import WebSocket from "ws"
import { allowedHost } from "../src/auth/ConsoleGuard.js"
import { ObservabilitySetupLive } from "../src/ops/ObservabilitySetup.js"
import { UpdatesLive } from "../src/ops/Updates.js"
import { startFakeRegistry } from "./support/fakeRegistry.js"
import { consoleJson, fetchJson, json, TestServer, TestServerLive } from "./support/TestServer.js"

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].find(existsSync)
if (CHROMIUM === undefined) {
  console.warn(
    "SKIPPED cross-site browser test: no Chromium at /usr/bin/chromium (install Debian's chromium to run it)"
  )
}

const root = mkdtempSync(join(tmpdir(), "console-guard-test-"))
process.env.npm_config_cache = join(root, "npm-cache")
const registry = await startFakeRegistry([{ name: "minor-pkg", versions: ["1.0.0", "1.2.0"], latest: "1.2.0" }])
const project = join(root, "project")
mkdirSync(join(project, "node_modules", "minor-pkg"), { recursive: true })
writeFileSync(
  join(project, "package.json"),
  JSON.stringify({ name: "p", version: "1.0.0", dependencies: { "minor-pkg": "^1.0.0" } })
)
writeFileSync(
  join(project, "node_modules", "minor-pkg", "package.json"),
  JSON.stringify({ name: "minor-pkg", version: "1.0.0" })
)
const envDir = join(root, "cwd")
mkdirSync(envDir)
const envFile = join(envDir, ".env")
afterAll(async () => {
  await registry.close()
  rmSync(root, { recursive: true, force: true })
})

const ops = Layer.merge(
  UpdatesLive({ projectDir: project, registry: registry.url }),
  ObservabilitySetupLive({ envFile })
)

/** A raw request, so that Host can be anything (fetch does not let a caller set it). */
const rawGet = (url: string, headers: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ status: number; headers: IncomingMessage["headers"]; body: string }>((resolve, reject) => {
      const req = request(url, { headers }, (response) => {
        let body = ""
        response.on("data", (chunk) => (body += chunk))
        response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }))
      })
      req.on("error", reject)
      req.end()
    })
  )

/** Opens a WebSocket and resolves with "open" or the status of the refused handshake. */
const handshake = (url: string, origin?: string) =>
  Effect.promise(() =>
    new Promise<number | "open">((resolve) => {
      const socket = new WebSocket(url, origin === undefined ? {} : { origin })
      socket.on("open", () => {
        resolve("open")
        socket.close()
      })
      socket.on("unexpected-response", (_request, response) => resolve(response.statusCode ?? 0))
      socket.on("error", () => {})
    })
  )

const EVIL = "http://evil.example"

describe("which Host names a console route answers", () => {
  it("loopback: the loopback names only; every interface: IP literals, localhost and this machine's name", () => {
    const loopback = allowedHost("127.0.0.1")
    expect(["127.0.0.1", "localhost", "[::1]"].every(loopback)).toBe(true)
    expect(["evil.example", "10.0.0.5", "localhost.evil.example", "127.0.0.1.nip.io"].some(loopback)).toBe(false)
    const everywhere = allowedHost("0.0.0.0")
    expect(["10.0.0.5", "127.0.0.1", "[fe80::1]", "localhost", hostname().toLowerCase()].every(everywhere)).toBe(true)
    expect(everywhere("evil.example")).toBe(false)
    const named = allowedHost("my-box.lan")
    expect(named("my-box.lan")).toBe(true)
    expect(named("10.0.0.5")).toBe(false)
  })
})

layer(TestServerLive({ override: ops }), { excludeTestServices: true })("console routes and other origins", (it) => {
  it.effect("a foreign Origin is refused on console reads, with no CORS headers; other routes keep CORS", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      for (
        const path of [
          "/observability/traces",
          "/observability/status",
          "/api/logs",
          "/updates",
          "/OBSERVABILITY//traces/"
        ]
      ) {
        const response = yield* fetchJson(`${url}${path}`, { headers: { origin: EVIL } })
        expect(response, path).toMatchObject({
          status: 403,
          body: { success: false, error: "Console routes refuse cross-origin requests" }
        })
        expect(response.headers.get("access-control-allow-origin"), path).toBeNull()
      }
      const preflight = yield* fetchJson(`${url}/setup-observability`, {
        method: "OPTIONS",
        headers: {
          origin: EVIL,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type"
        }
      })
      expect(preflight.status).toBe(403)
      expect(preflight.headers.get("access-control-allow-origin")).toBeNull()
      expect(preflight.headers.get("access-control-allow-methods")).toBeNull()

      const own = yield* fetchJson(`${url}/observability/status`, { headers: { origin: url } })
      expect(own.status).toBe(200)
      expect(own.headers.get("access-control-allow-origin")).toBeNull()
      expect((yield* fetchJson(`${url}/observability/status`, { headers: { origin: "null" } })).status).toBe(403)

      const tools = yield* fetchJson(`${url}/tools`, { headers: { origin: EVIL } })
      expect(tools.status).toBe(200)
      expect(tools.headers.get("access-control-allow-origin")).toBe("*")
    }))

  it.effect("a Host that is not an address of the service (DNS rebinding) is refused", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const port = new URL(url).port
      const rebound = yield* rawGet(`${url}/observability/traces`, { host: `evil.example:${port}` })
      expect(rebound.status).toBe(403)
      expect(JSON.parse(rebound.body)).toEqual({
        success: false,
        error: "Console routes answer only on the addresses the service listens on (Host refused)"
      })
      expect((yield* rawGet(`${url}/observability/traces`, { host: `localhost:${port}` })).status).toBe(200)
      // Other routes do not depend on the name they were reached by.
      expect((yield* rawGet(`${url}/tools`, { host: `evil.example:${port}` })).status).toBe(200)
    }))

  it.effect("console writes need x-service-dev: true outside production", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect(yield* fetchJson(`${url}/setup-observability`, json({ publicKey: "pk", secretKey: "sk" }))).toMatchObject({
        status: 401,
        body: { success: false, error: "Console writes need the header x-service-dev: true" }
      })
      expect(existsSync(envFile)).toBe(false)
      const foreign = yield* fetchJson(`${url}/setup-observability`, {
        ...consoleJson({ publicKey: "pk", secretKey: "sk" }),
        headers: { "content-type": "application/json", "x-service-dev": "true", origin: EVIL }
      })
      expect(foreign.status).toBe(403)
      expect(existsSync(envFile)).toBe(false)
      expect((yield* fetchJson(`${url}/setup-observability`, consoleJson({ publicKey: "pk", secretKey: "sk" }))).status)
        .toBe(200)
      expect(readFileSync(envFile, "utf8")).toBe("SERVICE_PUBLIC_KEY=pk\nSERVICE_SECRET_KEY=sk\n")
      rmSync(envFile)
    }))

  it.effect("console WebSockets refuse a foreign Origin at the handshake", () =>
    Effect.gen(function*() {
      const ws = (yield* TestServer).url.replace("http:", "ws:")
      expect(yield* handshake(`${ws}/ws/logs`, EVIL)).toBe(403)
      expect(yield* handshake(`${ws}/ws/observability`, EVIL)).toBe(403)
      expect(yield* handshake(`${ws}/ws/logs`)).toBe("open")
      expect(yield* handshake(`${ws}/ws/logs`, (yield* TestServer).url)).toBe("open")
    }))

  it.scoped.skipIf(CHROMIUM === undefined)(
    "a page on another origin cannot write .env, install or read traces",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const attacker = yield* Effect.acquireRelease(
          Effect.promise(async () => {
            const page = `<!doctype html><html><body>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<form id="setup" method="post" action="${url}/setup-observability" enctype="text/plain" target="sink1">
  <input name='{"publicKey":"evil","secretKey":"evil","x":"' value='"}'>
</form>
<form id="updates" method="post" action="${url}/updates" enctype="text/plain" target="sink2"></form>
<script>
  document.getElementById("setup").submit()
  document.getElementById("updates").submit()
  const attempt = (path, init) => fetch("${url}" + path, init).then((r) => r.text(), (e) => "blocked: " + e.name)
  const post = (path, body) => attempt(path, {
    method: "POST", headers: { "content-type": "application/json", "x-service-dev": "true" }, body: JSON.stringify(body)
  })
  window.outcome = Promise.all([
    attempt("/observability/traces"),
    post("/setup-observability", { publicKey: "evil", secretKey: "evil" }),
    post("/updates", {}),
    attempt("/tools")
  ])
</script></body></html>`
            const server = createServer((_request, response) => {
              response.writeHead(200, { "content-type": "text/html" })
              response.end(page)
            })
            await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
            return server
          }),
          (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
        )
        const browser = yield* Effect.acquireRelease(
          Effect.promise(() =>
            chromium.launch({
              executablePath: CHROMIUM!,
              args: [
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync"
              ]
            })
          ),
          (browser) => Effect.promise(() => browser.close())
        )
        const result = yield* Effect.promise(async () => {
          const page = await browser.newPage()
          const formPosts: Array<number> = []
          page.on("response", (response) => {
            if (response.request().method() === "POST" && response.request().resourceType() === "document") {
              formPosts.push(response.status())
            }
          })
          await page.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`)
          const outcome: Array<string> = await page.evaluate("window.outcome")
          const deadline = Date.now() + 20_000
          while (formPosts.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
          return { outcome, formPosts }
        })
        const [traces, setup, install, tools] = result.outcome
        expect(traces).toBe("blocked: TypeError")
        expect(setup).toBe("blocked: TypeError")
        expect(install).toBe("blocked: TypeError")
        // The page is a working cross-origin client of the non-console API, so the refusals above are the guard's.
        expect(tools).toContain("get_weather")
        expect(result.formPosts).toHaveLength(2)
        expect(result.formPosts.every((status) => status >= 400)).toBe(true)
        expect(existsSync(envFile)).toBe(false)
        expect(registry.requests).toEqual([])
        expect(JSON.parse(readFileSync(join(project, "node_modules", "minor-pkg", "package.json"), "utf8")).version)
          .toBe("1.0.0")
      }),
    90_000
  )
})
