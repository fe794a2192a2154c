import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { SignJWT } from "jose"
import { spawn } from "node:child_process"
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { Agent, request } from "node:http"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import WebSocket from "ws"
import { resolveServerConfig } from "../src/config/ServerConfig.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { freePort, killed, pollUntil, type Spawned, spawnMain, waitForHttp } from "./support/process.js"

const running: Array<Spawned> = []
const dirs: Array<string> = []
const start = (args: ReadonlyArray<string>, options: Parameters<typeof spawnMain>[1] = {}) => {
  const dir = mkdtempSync(join(tmpdir(), "service-cli-"))
  dirs.push(dir)
  const spawned = spawnMain(args, { cwd: dir, ...options })
  running.push(spawned)
  return { ...spawned, dir }
}
const writeConfig = (content: unknown) => {
  const dir = mkdtempSync(join(tmpdir(), "service-config-"))
  dirs.push(dir)
  const path = join(dir, "config.json")
  writeFileSync(path, typeof content === "string" ? content : JSON.stringify(content))
  return path
}

const ROOT = fileURLToPath(new URL("..", import.meta.url))

/**
 * Every environment variable src/ reads: `env.X`, `env["X"]`, `(env, "X")`, `process.env.X` and Effect's
 * `Config.string("X")` and its kind (read from the environment by the default ConfigProvider).
 */
const variablesRead = (): Array<string> => {
  const names = new Set<string>()
  const walk = (dir: string): void =>
    readdirSync(dir, { withFileTypes: true }).forEach((entry) => {
      if (entry.isDirectory()) return walk(join(dir, entry.name))
      if (!entry.name.endsWith(".ts")) return
      const text = readFileSync(join(dir, entry.name), "utf8")
      for (
        const match of text.matchAll(
          /\benv(?:\.|\[")([A-Z][A-Z0-9_]+)|\(env, "([A-Z][A-Z0-9_]+)"|process\.env\.([A-Za-z_][A-Za-z0-9_]*)|\bConfig\.\w+\("([A-Z][A-Z0-9_]+)"|\b(?:variable|secret|parsed|named|positive|booleanFrom)\("([A-Z][A-Z0-9_]+)"/g
        )
      ) {
        names.add(match[1] ?? match[2] ?? match[3] ?? match[4] ?? match[5])
      }
    })
  walk(join(ROOT, "src"))
  return [...names].sort()
}

afterEach(() => {
  running.splice(0).forEach(killed)
  dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true }))
})

/** A logfmt line's key=value pairs (values quoted as JSON strings when they need it). */
const logfmtPairs = (line: string): Array<[string, string]> =>
  Array.from(
    line.matchAll(/([\w.]+)=("(?:[^"\\]|\\.)*"|\S*)/g),
    ([, key, value]) => [key, value.startsWith("\"") ? JSON.parse(value) : value]
  )

describe("node dist/main.js", () => {
  it("serves on --port with SQLite at ./.data/service.db by default, ignoring PORT", async () => {
    const [port, decoy] = [await freePort(), await freePort()]
    const server = start(["--port", String(port)], { env: { PORT: String(decoy), LOG_FORMAT: "pretty" } })
    await waitForHttp(port)
    const tools = await fetch(`http://127.0.0.1:${port}/tools`).then((r) => r.json())
    expect(tools.data.map((t: { name: string }) => t.name)).toEqual(["get_weather", "add", "whoami"])
    await expect(fetch(`http://127.0.0.1:${decoy}/tools`)).rejects.toThrow()
    expect(existsSync(join(server.dir, ".data", "service.db"))).toBe(true)
    const url = `http://127.0.0.1:${port}`
    expect(server.stdout()).toContain(`Listening on ${url}`)
    expect(server.stdout()).toContain(
      `  console   ${url}/console\n  explorer  ${url}/ui\n  OpenAPI   ${url}/doc\n  model     builtin/echo (deterministic, offline`
    )
    expect(server.stdout()).toContain(
      "  storage   SQLite ./.data/service.db\n  auth      none, every route is public; console routes open"
    )
    expect(resolveServerConfig({}, { PORT: "1234" }).port).toBe(3141)
  })

  it("logs one line an entry when the output is not a terminal (logfmt), or JSON with LOG_FORMAT=json; trace ids on lines inside spans", async () => {
    for (const format of [undefined, "json"] as const) {
      const port = await freePort()
      const server = start(["--port", String(port)], { env: format === undefined ? {} : { LOG_FORMAT: format } })
      await waitForHttp(port)
      await fetch(`http://127.0.0.1:${port}/agents/assistant/text`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ input: "hi" })
      }).then((response) => response.text())
      const lines = await pollUntil(
        "the call's log line",
        () => server.stdout().split("\n").filter((line) => line !== ""),
        (found) => found.some((line) => line.includes("agent call completed"))
      )
      const entries = lines.map((line) => format === "json" ? JSON.parse(line) : Object.fromEntries(logfmtPairs(line)))
      const level = format === "json" ? "logLevel" : "level"
      expect(entries.filter((entry) => typeof entry[level] !== "string" || entry.message === undefined)).toEqual([])
      expect(entries.find((entry) => String(entry.message).startsWith("Listening on"))?.message).toContain(
        `  console   http://127.0.0.1:${port}/console`
      )
      const call = entries.find((entry) => String(entry.message).includes("agent call completed"))
      const annotations = format === "json" ? call.annotations : call
      expect(annotations.trace_id).toMatch(/^[0-9a-f]{32}$/)
      expect(annotations.span_id).toMatch(/^[0-9a-f]{16}$/)
    }
  })

  it("a request sent while the service starts is answered, never left hanging", async () => {
    // A provider loaded at start-up makes building the services asynchronous: a server that listened
    // before the app was attached accepted requests no handler ever answered.
    const port = await freePort()
    start(["--port", String(port)], {
      env: { AI_PROVIDER: "openai-compatible", AI_BASE_URL: "http://127.0.0.1:9/v1", AI_MODEL: "m", AI_API_KEY: "k" }
    })
    const deadline = Date.now() + 60_000
    let status = 0
    while (status !== 200 && Date.now() < deadline) {
      const outcome = await fetch(`http://127.0.0.1:${port}/agents`, { signal: AbortSignal.timeout(20_000) }).then(
        (response) => response.status,
        (error: Error) => (error.name === "TimeoutError" ? "hung" : "refused")
      )
      expect(outcome, "a request accepted during start-up got no answer within 20 s").not.toBe("hung")
      if (typeof outcome === "number") status = outcome
      else await new Promise((resolve) => setTimeout(resolve, 2))
    }
    expect(status).toBe(200)
  })

  it("a busy port exits non-zero with a one-line reason", async () => {
    const port = await freePort()
    const blocker: Server = createServer()
    await new Promise<void>((resolve) => blocker.listen(port, "127.0.0.1", resolve))
    try {
      const server = start(["--port", String(port)])
      const { code } = await server.exit
      expect(code).toBe(1)
      expect(server.stderr().trim()).toBe(`error: Cannot listen on 127.0.0.1:${port}: address already in use`)
    } finally {
      blocker.close()
    }
  })

  it("a bad config file exits 2 naming the field", async () => {
    const badPort = start(["--config", writeConfig({ port: "abc" })])
    expect((await badPort.exit).code).toBe(2)
    expect(badPort.stderr()).toMatch(/Invalid config file .*config\.json: port: Expected number, actual "abc"/)

    const unknown = start(["--config", writeConfig({ port: 1, colour: "blue" })])
    expect((await unknown.exit).code).toBe(2)
    expect(unknown.stderr()).toMatch(/colour: is unexpected/)

    const notJson = start(["--config", writeConfig("{port:")])
    expect((await notJson.exit).code).toBe(2)
    expect(notJson.stderr()).toMatch(/Invalid config file .*config\.json: /)

    const missing = start(["--config", "/nonexistent/config.json"])
    expect((await missing.exit).code).toBe(2)
    expect(missing.stderr()).toMatch(/Invalid config file \/nonexistent\/config\.json: .*ENOENT/)
  })

  it("a wrong model setting exits 2 naming the variable", async () => {
    const server = start(["--port", String(await freePort())], { env: { AI_PROVIDER: "skynet" } })
    expect((await server.exit).code).toBe(2)
    expect(server.stderr()).toContain("AI_PROVIDER: must be one of builtin, openai, anthropic, openai-compatible")
  })

  it("an empty JWT_SECRET exits 2 with a one-line reason instead of refusing every token", async () => {
    const server = start(["--port", String(await freePort())], { env: { JWT_SECRET: "" } })
    expect((await server.exit).code).toBe(2)
    expect(server.stderr().trim())
      .toBe("error: JWT_SECRET is empty: unset it to run without authentication, or give it a secret")
  })

  it("JWT_SECRET or the config file's auth section turns JWT on; a bad auth section exits 2", async () => {
    const port = await freePort()
    start(["--port", String(port)], { env: { JWT_SECRET: "cli-secret-of-enough-length" } })
    await waitForHttp(port)
    const anonymous = await fetch(`http://127.0.0.1:${port}/tools/add/execute`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: { a: 1, b: 2 } })
    })
    expect(anonymous.status).toBe(401)
    expect((await fetch(`http://127.0.0.1:${port}/agents`)).status).toBe(200)

    const keyless = start(["--config", writeConfig({ auth: { defaultPrivate: true } })])
    expect((await keyless.exit).code).toBe(2)
    expect(keyless.stderr()).toContain("auth: needs secret or publicKeyFile")
    const missingKey = start(["--config", writeConfig({ auth: { publicKeyFile: "/nonexistent.pem" } })])
    expect((await missingKey.exit).code).toBe(2)
    const badKey = start([
      "--config",
      writeConfig({ auth: { secret: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----" } })
    ])
    expect((await badKey.exit).code).toBe(2)
    expect(badKey.stderr()).toContain("auth:")
  })

  it("--help and -h exit 0 with the usage: every flag and every variable the service reads", async () => {
    const variables = variablesRead()
    expect(variables).toEqual(expect.arrayContaining(["DATABASE_URL", "AI_PROVIDER", "JWT_SECRET", "WORKFLOW_POLL_MS"]))
    for (const flag of ["--help", "-h"]) {
      // A broken environment does not stand in the way of reading the help.
      const help = start([flag], { env: { AI_PROVIDER: "skynet" } })
      expect((await help.exit).code).toBe(0)
      expect(help.stderr()).toBe("")
      const text = help.stdout()
      expect(text).toMatch(/^usage: node dist\/main\.js/)
      for (const option of ["--port N", "--host H", "--config FILE", "-h, --help"]) expect(text).toContain(option)
      for (const name of variables.filter((name) => !/^npm_config_/i.test(name))) expect(text, name).toContain(name)
    }
  })

  it(".env.example names every variable the service reads, each commented out", () => {
    const example = readFileSync(join(ROOT, ".env.example"), "utf8")
    for (const name of variablesRead()) expect(example, name).toMatch(new RegExp(`^# ${name}=`, "mi"))
    // Nothing is set by copying it: every assignment is commented.
    expect(example.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("#"))).toEqual([])
  })

  it.skipIf(!postgresAvailable)(
    "the banner names URL, /ui, /doc, model, Postgres host/db and auth; no secret reaches stdout or stderr",
    async () => {
      const scope = Effect.runSync(Scope.make())
      try {
        const database = new URL(await Effect.runPromise(Scope.extend(freshPostgresDatabase, scope)))
        database.password = "pg-password-never-printed" // trust authentication ignores it
        const secrets = { jwt: "jwt-secret-never-printed-0123456789", key: "sk-key-never-printed" }
        const port = await freePort()
        const server = start(["--port", String(port)], {
          env: {
            DATABASE_URL: database.toString(),
            JWT_SECRET: secrets.jwt,
            AI_PROVIDER: "openai-compatible",
            AI_BASE_URL: "http://127.0.0.1:9/v1",
            AI_MODEL: "m",
            AI_API_KEY: secrets.key,
            LOG_LEVEL: "debug",
            LOG_FORMAT: "pretty"
          }
        })
        await waitForHttp(port)
        const url = `http://127.0.0.1:${port}`
        expect(server.stdout()).toContain([
          `Listening on ${url}`,
          `  console   ${url}/console`,
          `  explorer  ${url}/ui`,
          `  OpenAPI   ${url}/doc`,
          "  model     m (openai-compatible at http://127.0.0.1:9/v1)",
          `  storage   Postgres 127.0.0.1:${database.port || 5432}${database.pathname}`,
          "  auth      JWT (shared secret), execution routes need a bearer token; console routes open (not production, loopback)"
        ].join("\n"))
        // A call that fails at the provider, and one with a forged token, log what they log.
        const token = await new SignJWT({ sub: "ann" }).setProtectedHeader({ alg: "HS256" }).setIssuedAt()
          .setExpirationTime("1h")
          .sign(new TextEncoder().encode(secrets.jwt))
        const call = (authorization: string) =>
          fetch(`${url}/agents/assistant/text`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization },
            body: JSON.stringify({ input: "hello" })
          })
        expect((await call(`Bearer ${token}`)).status).not.toBe(200)
        expect((await call("Bearer forged.token.value")).status).toBe(401)
        server.child.kill("SIGTERM")
        expect((await server.exit).code).toBe(0)
        const output = server.stdout() + server.stderr()
        for (const secret of [secrets.jwt, secrets.key, "pg-password-never-printed"]) {
          expect(output).not.toContain(secret)
        }

        const unreachable = start(["--port", String(await freePort())], {
          env: { DATABASE_URL: "postgres://ann:pg-password-never-printed@127.0.0.1:1/nowhere" }
        })
        expect((await unreachable.exit).code).toBe(1)
        expect(unreachable.stderr()).toContain("error: Storage unavailable")
        expect(unreachable.stdout() + unreachable.stderr()).not.toContain("pg-password-never-printed")
      } finally {
        await Effect.runPromise(Scope.close(scope, Exit.void))
      }
    }
  )

  it("bad flags exit 2 with the usage line", async () => {
    const unknownFlag = start(["--prot", "1"])
    expect((await unknownFlag.exit).code).toBe(2)
    expect(unknownFlag.stderr()).toMatch(/usage: node dist\/main\.js/)
    const badPort = start(["--port", "http"])
    expect((await badPort.exit).code).toBe(2)
    expect(badPort.stderr()).toContain("--port: must be an integer from 0 to 65535")
  })

  it("the config file sets port, host, bodyLimit, Swagger UI and storage; flags win over it", async () => {
    const [port, flagPort] = [await freePort(), await freePort()]
    const dir = mkdtempSync(join(tmpdir(), "service-db-"))
    dirs.push(dir)
    const config = writeConfig({
      port,
      host: "127.0.0.1",
      bodyLimit: 100,
      enableSwaggerUI: false,
      storage: { url: `file:${join(dir, "configured.db")}` }
    })
    start(["--config", config])
    await waitForHttp(port)
    const big = await fetch(`http://127.0.0.1:${port}/tools/add/execute`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: { a: 1, b: 2, pad: "x".repeat(200) } })
    })
    expect(big.status).toBe(413)
    expect((await fetch(`http://127.0.0.1:${port}/ui`)).status).toBe(404)
    expect(existsSync(join(dir, "configured.db"))).toBe(true)

    start(["--config", config, "--port", String(flagPort)])
    await waitForHttp(flagPort)
  })

  it("DATABASE_URL selects the SQLite file; LOG_LEVEL=error silences info logs", async () => {
    const port = await freePort()
    const dir = mkdtempSync(join(tmpdir(), "service-db-"))
    dirs.push(dir)
    const server = start(["--port", String(port)], {
      env: { DATABASE_URL: `file:${join(dir, "env.db")}`, LOG_LEVEL: "error" }
    })
    await waitForHttp(port)
    expect(existsSync(join(dir, "env.db"))).toBe(true)
    expect(server.stdout()).not.toContain("Listening on")
  })

  it("SIGTERM ends open SSE streams and WebSockets and exits 0 within 5 s", async () => {
    const port = await freePort()
    const server = start(["--port", String(port)])
    await waitForHttp(port)
    const words = Array.from({ length: 2000 }, (_, i) => `word${i}`).join(" ")
    const stream = await fetch(`http://127.0.0.1:${port}/agents/assistant/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: words })
    })
    const reader = stream.body!.getReader()
    await reader.read()
    const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`)
    await new Promise((resolve) => socket.once("message", resolve))
    const started = Date.now()
    server.child.kill("SIGTERM")
    const { code } = await server.exit
    expect(server.stderr()).toBe("")
    expect(code).toBe(0)
    expect(Date.now() - started).toBeLessThan(5000)
    socket.terminate()
  })

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} with an open keep-alive connection and a request in flight exits 0 within 5 s`, async () => {
      const port = await freePort()
      const server = start(["--port", String(port)])
      await waitForHttp(port)
      const agent = new Agent({ keepAlive: true })
      await new Promise<void>((resolve, reject) =>
        request(`http://127.0.0.1:${port}/tools`, { agent }, (res) => {
          res.resume()
          res.on("end", resolve)
        }).on("error", reject).end()
      )
      // A request whose body never finishes keeps its connection busy.
      const hanging = request(`http://127.0.0.1:${port}/tools/add/execute`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": "1000" }
      })
      hanging.on("error", () => {})
      hanging.write("{")
      await new Promise((resolve) => setTimeout(resolve, 100))
      const started = Date.now()
      server.child.kill(signal)
      const { code } = await server.exit
      expect(code).toBe(0)
      expect(Date.now() - started).toBeLessThan(5000)
      agent.destroy()
    })
  }
})

describe("npm run dev", () => {
  it("serves the sources, rebuilds and restarts on a change, keeps the last good build through a broken one", async () => {
    expect(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts.dev).toBe(
      "node scripts/require-node-line.mjs && node scripts/dev.mjs"
    )
    // A copy of the sources, so that the test can change them.
    const dir = mkdtempSync(join(tmpdir(), "service-dev-"))
    dirs.push(dir)
    cpSync(join(ROOT, "src"), join(dir, "src"), { recursive: true })
    cpSync(join(ROOT, "scripts", "dev.mjs"), join(dir, "scripts", "dev.mjs"))
    cpSync(join(ROOT, "package.json"), join(dir, "package.json"))
    symlinkSync(realpathSync(join(ROOT, "node_modules")), join(dir, "node_modules"))
    const port = await freePort()
    const { PATH, HOME } = process.env
    // Its own process group: if the test fails, the group (dev.mjs and the service it runs) is killed.
    const dev = spawn(process.execPath, [join(dir, "scripts", "dev.mjs"), "--port", String(port)], {
      cwd: dir,
      env: { PATH, HOME },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true
    })
    let output = ""
    dev.stdout!.on("data", (chunk) => (output += chunk))
    dev.stderr!.on("data", (chunk) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => dev.once("exit", resolve))
    const addDescription = () =>
      fetch(`http://127.0.0.1:${port}/tools`).then((r) => r.json()).then(
        (body: { data: Array<{ name: string; description: string }> }) =>
          body.data.find((tool) => tool.name === "add")?.description,
        () => undefined
      )
    const eventually = async <A>(what: string, probe: () => Promise<A>, done: (value: A) => boolean) => {
      const deadline = Date.now() + 90_000
      for (let value = await probe();; value = await probe()) {
        if (done(value)) return value
        if (Date.now() > deadline) throw new Error(`${what}: not within 90 s; dev output:\n${output}`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    try {
      await eventually("the first build serves", addDescription, (description) => description === "Add two numbers")
      expect(output).toContain(`Listening on http://127.0.0.1:${port}`)
      const tools = join(dir, "src", "examples", "tools.ts")
      writeFileSync(tools, readFileSync(tools, "utf8").replace("\"Add two numbers\"", "\"Add two numbers, changed\""))
      await eventually(
        "the change is served",
        addDescription,
        (description) => description === "Add two numbers, changed"
      )
      expect(output).toContain("[dev] rebuilt; restarting")

      writeFileSync(tools, readFileSync(tools, "utf8") + "\nexport const broken = ;\n")
      await eventually(
        "the broken build is reported",
        async () => output,
        (text) => text.includes("[dev] build failed")
      )
      expect(await addDescription()).toBe("Add two numbers, changed")
      expect(output).not.toContain("the service exited")
      // The compiler's error once, and nothing of esbuild's own (a plugin error with its stack).
      expect(output.match(/Unexpected ";"/g)).toHaveLength(1)
      expect(output).not.toMatch(/onEnd\(\) callback|\n\s+at /)

      dev.kill("SIGTERM")
      expect(await exited).toBe(0)
      await expect(fetch(`http://127.0.0.1:${port}/tools`)).rejects.toThrow()
    } finally {
      if (dev.exitCode === null) process.kill(-dev.pid!, "SIGKILL")
    }
  })
})
