import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach } from "vitest"

export const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url))

export { freePort } from "../../scripts/support/service.js"

export interface Spawned {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/**
 * Runs `node dist/main.js ...args` (or `node <script> ...args`: an app of a test's own served from the
 * build) with the given environment (PORT and friends removed unless given).
 */
export const spawnMain = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly cwd?: string; readonly script?: string } = {}
): Spawned => {
  const {
    AI_API_KEY: _key,
    AI_BASE_URL: _base,
    AI_MODEL: _model,
    AI_PROVIDER: _provider,
    ANTHROPIC_API_KEY: _anthropic,
    DATABASE_URL: _db,
    JWT_SECRET: _jwt,
    SERVICE_CONSOLE_ACCESS_KEY: _console,
    LOG_LEVEL: _level,
    NODE_ENV: _env,
    OPENAI_API_KEY: _openai,
    PORT: _port,
    ...inherited
  } = process.env
  const child = spawn(process.execPath, [options.script ?? MAIN, ...args], {
    cwd: options.cwd,
    env: { ...inherited, ...options.env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  let err = ""
  child.stdout!.on("data", (chunk) => (out += chunk))
  child.stderr!.on("data", (chunk) => (err += chunk))
  const exit = once(child, "exit").then(([code, signal]) => ({ code, signal }))
  return { child, stdout: () => out, stderr: () => err, exit }
}

/** Resolves once something accepts HTTP on the port, or rejects after `ms`. */
export const waitForHttp = async (port: number, ms = 60_000): Promise<void> => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    try {
      await fetch(`http://127.0.0.1:${port}/doc`)
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  throw new Error(`nothing listening on ${port} after ${ms} ms`)
}

export const killed = (spawned: Spawned) => {
  if (spawned.child.exitCode === null) spawned.child.kill("SIGKILL")
}

/** Probes until `done` holds (every 50 ms, up to `deadlineMs`), then answers the last value. */
export const pollUntil = async <A>(
  what: string,
  probe: () => A | Promise<A>,
  done: (value: A) => boolean,
  deadlineMs = 30_000
): Promise<A> => {
  const deadline = Date.now() + deadlineMs
  for (let value = await probe();; value = await probe()) {
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: not within ${deadlineMs / 1000} s`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * Processes of a fixture app (`script`, an embedding of the service) for one test file: `start` spawns
 * one on a port and database and waits until it answers; `tempDir` makes a directory. Both are cleaned
 * up after each test.
 */
export const fixtureApp = (script: string) => {
  const running: Array<Spawned> = []
  const dirs: Array<string> = []
  afterEach(() => {
    running.splice(0).forEach(killed)
    dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true }))
  })
  return {
    tempDir: (prefix: string) => {
      const dir = mkdtempSync(join(tmpdir(), prefix))
      dirs.push(dir)
      return dir
    },
    start: async (port: number, databaseUrl: string) => {
      const server = spawnMain(["--port", String(port)], {
        script,
        env: { DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" }
      })
      running.push(server)
      await waitForHttp(port)
      return server
    }
  }
}
