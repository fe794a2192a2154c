import { afterAll, describe, expect, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseEnv } from "node:util"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { setEnvValues } from "../src/ops/EnvFile.js"
import { ObservabilitySetupLive } from "../src/ops/ObservabilitySetup.js"
import { updateType } from "../src/ops/semver.js"
import { UpdatesLive, type UpdatesOptions } from "../src/ops/Updates.js"
import { type FakePackage, startFakeRegistry, startSilentServer } from "./support/fakeRegistry.js"
import { freePort } from "./support/process.js"
import { consoleJson, fetchJson, TestServer, TestServerLive } from "./support/TestServer.js"

const root = mkdtempSync(join(tmpdir(), "ops-test-"))
// npm's cache too stays inside the test's directory (the service's npm inherits the environment).
process.env.npm_config_cache = join(root, "npm-cache")

const packages: ReadonlyArray<FakePackage> = [
  { name: "minor-pkg", versions: ["1.0.0", "1.2.0"], latest: "1.2.0" },
  { name: "current-pkg", versions: ["2.0.0"], latest: "2.0.0" },
  { name: "@scope/major-pkg", versions: ["1.4.0", "2.0.0"], latest: "2.0.0" },
  { name: "patch-pkg", versions: ["0.3.1", "0.3.4"], latest: "0.3.4" },
  { name: "broken-pkg", versions: ["1.0.0", "1.1.0"], latest: "1.1.0" },
  { name: "missing-pkg", versions: ["1.0.0"], latest: "1.0.0" },
  { name: "dev-pkg", versions: ["1.0.0", "3.0.0"], latest: "3.0.0" },
  { name: "slow-pkg", versions: ["1.0.0", "1.1.0"], latest: "1.1.0" }
]
const registry = await startFakeRegistry(packages)
const silent = await startSilentServer()
afterAll(async () => {
  await registry.close()
  await silent.close()
  rmSync(root, { recursive: true, force: true })
})

/** A project directory with package.json and hand-installed node_modules. */
const makeProject = (
  name: string,
  manifest: { dependencies?: Record<string, string>; devDependencies?: Record<string, string> },
  installed: Record<string, string>
) => {
  const dir = join(root, name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name, version: "1.0.0", private: true, ...manifest }, null, 2)
  )
  for (const [pkg, version] of Object.entries(installed)) {
    mkdirSync(join(dir, "node_modules", pkg), { recursive: true })
    writeFileSync(join(dir, "node_modules", pkg, "package.json"), JSON.stringify({ name: pkg, version }))
  }
  return dir
}

const project = makeProject("project", {
  dependencies: {
    "minor-pkg": "^1.0.0",
    "current-pkg": "^2.0.0",
    "@scope/major-pkg": "~1.4.0",
    "patch-pkg": "0.3.1",
    "broken-pkg": "^1.0.0",
    "missing-pkg": "^1.0.0"
  },
  devDependencies: { "dev-pkg": "^1.0.0" }
}, {
  "minor-pkg": "1.0.0",
  "current-pkg": "2.0.0",
  "@scope/major-pkg": "1.4.0",
  "patch-pkg": "0.3.1",
  "broken-pkg": "1.0.0",
  "dev-pkg": "1.0.0"
})

const envDir = join(root, "cwd")
mkdirSync(envDir)
const envFile = join(envDir, ".env")

const opsLayer = (options: UpdatesOptions) => Layer.merge(UpdatesLive(options), ObservabilitySetupLive({ envFile }))
const installedVersion = (dir: string, name: string) =>
  JSON.parse(readFileSync(join(dir, "node_modules", name, "package.json"), "utf8")).version
const ranges = (dir: string) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).dependencies
const packumentRequests = () => registry.requests.filter((path) => !path.includes("/-/")).length

layer(TestServerLive({ override: opsLayer({ projectDir: project, registry: registry.url }) }), {
  excludeTestServices: true
})(
  "updates against a fake registry",
  (it) => {
    it.effect("GET /updates lists only the outdated runtime dependencies, classified", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const response = yield* fetchJson(`${url}/updates`)
        expect(response.status).toBe(200)
        expect(response.body).toEqual({
          success: true,
          data: {
            hasUpdates: true,
            count: 4,
            message: "4 updates available",
            updates: [
              { name: "minor-pkg", installed: "1.0.0", latest: "1.2.0", type: "minor" },
              { name: "@scope/major-pkg", installed: "1.4.0", latest: "2.0.0", type: "major" },
              { name: "patch-pkg", installed: "0.3.1", latest: "0.3.4", type: "patch" },
              { name: "broken-pkg", installed: "1.0.0", latest: "1.1.0", type: "minor" }
            ]
          }
        })
        // Installed dependencies only (missing-pkg is not installed; dev-pkg is a devDependency), scoped names encoded.
        expect([...registry.requests].sort()).toEqual(
          ["/@scope%2fmajor-pkg", "/broken-pkg", "/current-pkg", "/minor-pkg", "/patch-pkg"]
        )
      }))

    it.effect("a second check within the cache window does not ask the registry again", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = registry.requests.length
        const response = yield* fetchJson(`${url}/updates`)
        expect(response.body.data.count).toBe(4)
        expect(registry.requests.length).toBe(before)
      }))

    it.effect("POST /updates refuses names that are not runtime dependencies, and bad bodies", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        expect(yield* fetchJson(`${url}/updates`, consoleJson({ packageName: "left-pad" }))).toMatchObject({
          status: 400,
          body: { success: false, error: "Package left-pad is not a dependency of this service" }
        })
        expect((yield* fetchJson(`${url}/updates`, consoleJson({ packageName: "dev-pkg" }))).body.error)
          .toBe("Package dev-pkg is not a dependency of this service")
        expect(yield* fetchJson(`${url}/updates`, consoleJson({ packageName: 5 }))).toMatchObject({
          status: 400,
          body: { success: false, error: "Input validation failed: packageName: Expected string, actual 5" }
        })
      }))

    it.effect("POST /updates installs one dependency with npm while the server keeps answering", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        registry.slow.set("minor-pkg-1.2.0.tgz", 1_500)
        let settled = false
        const install = fetchJson(`${url}/updates`, consoleJson({ packageName: "minor-pkg" })).pipe(
          Effect.ensuring(Effect.sync(() => (settled = true))),
          Effect.runPromise
        )
        while (!registry.requests.includes("/minor-pkg/-/minor-pkg-1.2.0.tgz")) yield* Effect.sleep("20 millis")

        const started = Date.now()
        const other = yield* fetchJson(`${url}/updates`)
        expect(other.status).toBe(200)
        expect(Date.now() - started).toBeLessThan(500)
        expect(yield* fetchJson(`${url}/updates`, consoleJson({}))).toMatchObject({
          status: 400,
          body: { success: false, error: "An update is already running" }
        })
        expect(settled).toBe(false)

        const response = yield* Effect.promise(() => install)
        expect(response.status).toBe(200)
        expect(response.body.data).toMatchObject({
          packageName: "minor-pkg",
          installed: [{ name: "minor-pkg", version: "1.2.0" }],
          message: "Installed minor-pkg@1.2.0"
        })
        expect(typeof response.body.data.output).toBe("string")
        expect(installedVersion(project, "minor-pkg")).toBe("1.2.0")
        expect(ranges(project)["minor-pkg"]).toBe("^1.2.0")
      }))

    it.effect("a failing npm install is a 500 carrying npm's error; node_modules is left as it was", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        registry.failing.add("broken-pkg")
        const response = yield* fetchJson(`${url}/updates`, consoleJson({ packageName: "broken-pkg" }))
        registry.failing.delete("broken-pkg")
        expect(response.status).toBe(500)
        expect(response.body.success).toBe(false)
        expect(response.body.error).toMatch(
          /^npm install failed \(exit code \d+\): npm error code E404\n[\s\S]*404 Not Found - GET http/
        )
        expect(installedVersion(project, "broken-pkg")).toBe("1.0.0")
      }))

    it.effect("an install invalidates the cache; POST {} installs every outdated dependency, keeping range styles", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const before = packumentRequests()
        const report = yield* fetchJson(`${url}/updates`)
        expect(packumentRequests()).toBeGreaterThan(before)
        // npm sorted package.json's dependencies when it saved; the report follows package.json.
        expect(report.body.data.updates.map((update: { name: string }) => update.name))
          .toEqual(["@scope/major-pkg", "broken-pkg", "patch-pkg"])

        const response = yield* fetchJson(`${url}/updates`, consoleJson({}))
        expect(response.status).toBe(200)
        expect(response.body.data).toMatchObject({
          packageName: "all",
          installed: [
            { name: "@scope/major-pkg", version: "2.0.0" },
            { name: "broken-pkg", version: "1.1.0" },
            { name: "patch-pkg", version: "0.3.4" }
          ]
        })
        expect(ranges(project)).toMatchObject({
          "@scope/major-pkg": "~2.0.0",
          "broken-pkg": "^1.1.0",
          "patch-pkg": "0.3.4"
        })

        expect((yield* fetchJson(`${url}/updates`)).body.data).toEqual({
          hasUpdates: false,
          updates: [],
          count: 0,
          message: "All dependencies are up to date"
        })
        expect((yield* fetchJson(`${url}/updates`, consoleJson({}))).body.data).toEqual({
          packageName: "all",
          installed: [],
          message: "All dependencies are up to date; nothing to install",
          output: ""
        })
      }))
  }
)

const slowProject = makeProject("slow", { dependencies: { "slow-pkg": "^1.0.0" } }, { "slow-pkg": "1.0.0" })

layer(
  TestServerLive({ override: opsLayer({ projectDir: slowProject, registry: registry.url, installTimeoutMs: 8_000 }) }),
  { excludeTestServices: true }
)("an install that takes too long", (it) => {
  it.effect(
    "is stopped at its time-out and reported; the next install runs and completes",
    () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        registry.slow.set("slow-pkg-1.1.0.tgz", 30_000)
        const started = Date.now()
        const response = yield* fetchJson(`${url}/updates`, consoleJson({ packageName: "slow-pkg" }))
        registry.slow.delete("slow-pkg-1.1.0.tgz")
        expect(Date.now() - started).toBeLessThan(14_000)
        expect(response).toMatchObject({
          status: 500,
          body: { success: false, error: "npm install did not finish within 8000 ms and was stopped" }
        })
        // npm, killed mid-install, may have moved the old version aside already: installing again repairs it.
        const again = yield* fetchJson(`${url}/updates`, consoleJson({ packageName: "slow-pkg" }))
        expect(again.status).toBe(200)
        expect(installedVersion(slowProject, "slow-pkg")).toBe("1.1.0")
      }),
    60_000
  )
})

const closedPort = await freePort()

layer(
  TestServerLive({ override: opsLayer({ projectDir: project, registry: `http://127.0.0.1:${closedPort}` }) }),
  { excludeTestServices: true }
)("an unreachable registry", (it) => {
  it.effect("GET /updates is 200 with hasUpdates false and says why; POST cannot install", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const response = yield* fetchJson(`${url}/updates`)
      expect(response.status).toBe(200)
      expect(response.body.data).toMatchObject({ hasUpdates: false, updates: [], count: 0 })
      expect(response.body.data.message).toBe(
        `Could not reach the npm registry at http://127.0.0.1:${closedPort}/: connect ECONNREFUSED 127.0.0.1:${closedPort}`
      )
      const install = yield* fetchJson(`${url}/updates`, consoleJson({}))
      expect(install.status).toBe(500)
      expect(install.body.error).toBe(response.body.data.message)
    }))
})

layer(
  TestServerLive({ override: opsLayer({ projectDir: project, registry: silent.url, timeoutMs: 300 }) }),
  { excludeTestServices: true }
)("a registry that does not answer", (it) => {
  it.effect("times out once, not once per dependency", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      const started = Date.now()
      const response = yield* fetchJson(`${url}/updates`)
      expect(Date.now() - started).toBeLessThan(2_000)
      expect(response.body.data).toMatchObject({
        hasUpdates: false,
        count: 0,
        message: `Could not reach the npm registry at ${silent.url}: no answer within 300 ms`
      })
    }))
})

const empty = makeProject("empty", { dependencies: {} }, {})
const production = resolveServerConfig({}, { NODE_ENV: "production", SERVICE_CONSOLE_ACCESS_KEY: "k3y" })

layer(
  TestServerLive({
    config: { auth: production.auth, production: true },
    override: opsLayer({ projectDir: empty, registry: registry.url })
  }),
  { excludeTestServices: true }
)("console access in production", (it) => {
  it.effect("the ops routes need the console key", () =>
    Effect.gen(function*() {
      const { url } = yield* TestServer
      expect(yield* fetchJson(`${url}/updates`)).toMatchObject({
        status: 401,
        body: { success: false, error: "Console access key required" }
      })
      expect((yield* fetchJson(`${url}/setup-observability`, consoleJson({ publicKey: "a", secretKey: "b" }))).status)
        .toBe(401)
      const allowed = yield* fetchJson(`${url}/updates`, { headers: { "x-console-access-key": "k3y" } })
      expect(allowed).toMatchObject({
        status: 200,
        body: { success: true, data: { hasUpdates: false, count: 0, message: "All dependencies are up to date" } }
      })
    }))
})

layer(TestServerLive({ override: opsLayer({ projectDir: empty, registry: registry.url }) }), {
  excludeTestServices: true
})(
  "POST /setup-observability",
  (it) => {
    const mode = () => statSync(envFile).mode & 0o777
    const setup = (body: unknown) =>
      Effect.flatMap(TestServer, ({ url }) => fetchJson(`${url}/setup-observability`, consoleJson(body)))

    it.effect("creates .env with mode 0600 when there is none", () =>
      Effect.gen(function*() {
        const response = yield* setup({ publicKey: "pk-1", secretKey: "sk-1" })
        expect(response).toMatchObject({
          status: 200,
          body: { success: true, data: { file: envFile, keys: ["SERVICE_PUBLIC_KEY", "SERVICE_SECRET_KEY"] } }
        })
        expect(readFileSync(envFile, "utf8")).toBe("SERVICE_PUBLIC_KEY=pk-1\nSERVICE_SECRET_KEY=sk-1\n")
        expect(mode()).toBe(0o600)
      }))

    it.effect("keeps every other line and comment, replaces the keys in place, tightens the mode", () =>
      Effect.gen(function*() {
        writeFileSync(
          envFile,
          "# settings\nFOO=bar\nexport SERVICE_PUBLIC_KEY=old\n\nOTHER='x y' # note\nSERVICE_PUBLIC_KEY=duplicate\n",
          { mode: 0o644 }
        )
        expect((yield* setup({ publicKey: "pk-2", secretKey: "s3cret with #hash" })).status).toBe(200)
        expect(readFileSync(envFile, "utf8")).toBe(
          "# settings\nFOO=bar\nexport SERVICE_PUBLIC_KEY=pk-2\n\nOTHER='x y' # note\nSERVICE_SECRET_KEY='s3cret with #hash'\n"
        )
        expect(mode()).toBe(0o600)

        expect((yield* setup({ publicKey: "pk-3", secretKey: "sk-3" })).status).toBe(200)
        expect(readFileSync(envFile, "utf8")).toBe(
          "# settings\nFOO=bar\nexport SERVICE_PUBLIC_KEY=pk-3\n\nOTHER='x y' # note\nSERVICE_SECRET_KEY=sk-3\n"
        )
        expect(readdirSync(envDir)).toEqual([".env"])
      }))

    it.effect("a key with every kind of quote is written so that Node reads it back unchanged", () =>
      Effect.gen(function*() {
        expect((yield* setup({ publicKey: "a'b\"c`d", secretKey: "it's \"x\" #1" })).status).toBe(200)
        expect(parseEnv(readFileSync(envFile, "utf8"))).toMatchObject({
          SERVICE_PUBLIC_KEY: "a'b\"c`d",
          SERVICE_SECRET_KEY: "it's \"x\" #1"
        })
      }))

    it.effect("a missing, empty, multi-line, NUL or unwritable key is 400 and the file is untouched", () =>
      Effect.gen(function*() {
        const before = readFileSync(envFile, "utf8")
        expect(yield* setup({ publicKey: "pk" })).toMatchObject({
          status: 400,
          body: { success: false, error: "Input validation failed: secretKey: is missing" }
        })
        expect(yield* setup({ publicKey: "pk\nINJECTED=1", secretKey: "sk" })).toMatchObject({
          status: 400,
          body: { success: false, error: "Input validation failed: publicKey: must not contain a newline" }
        })
        expect((yield* setup({ publicKey: "pk", secretKey: "sk\r" })).body.error)
          .toBe("Input validation failed: secretKey: must not contain a newline")
        expect((yield* setup({ publicKey: "", secretKey: "sk" })).body.error)
          .toBe("Input validation failed: publicKey: must not be empty")
        expect((yield* setup({ publicKey: "pk\u0000", secretKey: "sk" })).body.error)
          .toBe("Input validation failed: publicKey: must not contain NUL characters (\\u0000)")
        expect(yield* setup({ publicKey: "pk", secretKey: "'a\"b`c" }))
          .toMatchObject({
            status: 400,
            body: {
              error: expect.stringMatching(/^Input validation failed: secretKey: cannot be written to \.env unchanged/)
            }
          })
        expect(readFileSync(envFile, "utf8")).toBe(before)
        expect(readdirSync(envDir)).toEqual([".env"])
      }))

    it.effect("a key longer than 1,024 characters is 400 and the file is untouched; 1,024 is written", () =>
      Effect.gen(function*() {
        writeFileSync(envFile, "FOO=bar\n", { mode: 0o600 })
        const before = readFileSync(envFile, "utf8")
        expect(yield* setup({ publicKey: "p".repeat(9 * 1024 * 1024), secretKey: "sk" })).toMatchObject({
          status: 400,
          body: { success: false, error: "Input validation failed: publicKey: must be at most 1024 characters" }
        })
        expect((yield* setup({ publicKey: "pk", secretKey: "s".repeat(1025) })).body.error)
          .toBe("Input validation failed: secretKey: must be at most 1024 characters")
        expect(readFileSync(envFile, "utf8")).toBe(before)
        expect((yield* setup({ publicKey: "p".repeat(1024), secretKey: "sk" })).status).toBe(200)
        expect(parseEnv(readFileSync(envFile, "utf8")).SERVICE_PUBLIC_KEY).toHaveLength(1024)
      }))
  }
)

describe("updateType", () => {
  it("classifies newer versions and ignores older or equal ones", () => {
    expect(updateType("1.0.0", "2.0.0")).toBe("major")
    expect(updateType("1.0.0", "1.1.0")).toBe("minor")
    expect(updateType("1.0.0", "1.0.1")).toBe("patch")
    expect(updateType("1.0.0-beta.2", "1.0.0")).toBe("patch")
    expect(updateType("1.0.0-beta.2", "1.0.0-beta.10")).toBe("patch")
    expect(updateType("1.0.0", "1.0.0")).toBeUndefined()
    expect(updateType("2.0.0-rc.1", "1.9.9")).toBeUndefined()
    expect(updateType("1.10.0", "1.9.0")).toBeUndefined()
    expect(updateType("not-a-version", "1.0.0")).toBeUndefined()
  })
})

describe("setEnvValues", () => {
  it("quotes only when needed, keeps CRLF files CRLF and replaces a multi-line value whole", () => {
    expect(setEnvValues("", [["A", "plain-value_1.2:3/4+5=6@x"]])).toBe("A=plain-value_1.2:3/4+5=6@x\n")
    expect(setEnvValues("", [["A", "it's"]])).toBe("A=\"it's\"\n")
    expect(setEnvValues("X=1\r\nA=old\r\n", [["A", "new"]])).toBe("X=1\r\nA=new\r\n")
    expect(setEnvValues("A=\"line one\nline two\"\nB=2", [["A", "one"]])).toBe("A=one\nB=2\n")
  })
})
