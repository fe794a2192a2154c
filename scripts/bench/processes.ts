/**
 * The processes a bench run starts (the service, the fake model, the raw and minimal servers) and the
 * temporary directories it makes, all registered so they are stopped and removed on exit, even on error.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort, type ServiceProcess, sleep, startService, stopService, waitUntilReady } from "../support/service.js"

/** The repository root, from the compiled script's place in .build/scripts/bench/. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const BUILT_SCRIPTS = fileURLToPath(new URL("../", import.meta.url))

const children = new Set<ChildProcess>()
const directories = new Set<string>()

const killAllNow = () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  for (const directory of directories) rmSync(directory, { recursive: true, force: true })
}

let cleanupInstalled = false
/** Kills every registered process and removes every temporary directory when this process ends. */
export const installCleanup = () => {
  if (cleanupInstalled) return
  cleanupInstalled = true
  process.on("exit", killAllNow)
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      killAllNow()
      process.exit(130)
    })
  }
}

export const temporaryDirectory = (prefix: string): string => {
  const directory = mkdtempSync(join(tmpdir(), prefix))
  directories.add(directory)
  return directory
}

export const removeDirectory = (directory: string) => {
  rmSync(directory, { recursive: true, force: true })
  directories.delete(directory)
}

export interface Server {
  readonly name: string
  readonly port: number
  readonly pid: number
  readonly url: string
  readonly stop: () => Promise<void>
}

const track = (child: ChildProcess) => {
  children.add(child)
  child.once("exit", () => children.delete(child))
}

/** Resolves once `url` answers any HTTP status; fails after `ms` or when `alive` turns false. */
export const waitForHttp = async (url: string, alive: () => boolean, ms = 30_000, everyMs = 50): Promise<void> => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (!alive()) throw new Error(`the process behind ${url} exited`)
    const answered = await new Promise<boolean>((resolve) => {
      const req = request(url, { agent: false, timeout: 2_000 }, (res) => {
        res.resume()
        resolve(true)
      })
      req.on("error", () => resolve(false))
      req.on("timeout", () => req.destroy())
      req.end()
    })
    if (answered) return
    await sleep(everyMs)
  }
  throw new Error(`${url} did not answer within ${ms} ms`)
}

/** One of the compiled helper scripts (fake model, raw server, minimal app) as its own process on a free port. */
export const startScript = async (
  name: string,
  script: string,
  readyPath: string,
  args: ReadonlyArray<string> = []
): Promise<Server> => {
  const port = await freePort()
  const child = spawn(process.execPath, [join(BUILT_SCRIPTS, script), "--port", String(port), ...args], {
    stdio: ["ignore", "ignore", "inherit"]
  })
  track(child)
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const alive = () => child.exitCode === null && child.signalCode === null
  const url = `http://127.0.0.1:${port}`
  await waitForHttp(`${url}${readyPath}`, alive)
  return {
    name,
    port,
    pid: child.pid ?? -1,
    url,
    stop: async () => {
      if (alive()) child.kill("SIGTERM")
      await Promise.race([exited, sleep(5_000)])
      if (alive()) child.kill("SIGKILL")
      await exited
    }
  }
}

/** The fake model; a "slowly" request gets at least SLOW_ANSWER_WORDS words, one every 200 ms (about two minutes). */
export const SLOW_ANSWER_WORDS = 600
export const startFake = () =>
  startScript("fake model", "fake-openai.js", "/v1/models", ["--slow-words", String(SLOW_ANSWER_WORDS)])
export const startRawServer = () => startScript("raw node:http", "bench/raw-server.js", "/agents")
export const startMinimalApp = () => startScript("minimal HttpApi app", "bench/minimal-httpapi.js", "/agents")

/** The model settings that point the service's agents at the fake over real HTTP, as a user would set them. */
export const fakeModelEnv = (fake: Server): Record<string, string> => ({
  AI_PROVIDER: "openai-compatible",
  AI_BASE_URL: `${fake.url}/v1`,
  AI_MODEL: "fake-model",
  AI_API_KEY: "bench-key"
})

export interface RunningService extends Server {
  readonly process: ServiceProcess
  readonly databaseFile: string
}

/** The working tree's build: the service under test unless `--against` adds the reference's. */
export const HEAD_MAIN = join(REPO_ROOT, "dist/main.js")

/** `node <main>` with its default configuration on `databaseFile` (a new one in a temp dir when omitted). */
export const startBenchService = async (options: {
  readonly main: string
  readonly env: Record<string, string>
  readonly databaseFile?: string
}): Promise<RunningService> => {
  const databaseFile = options.databaseFile ?? join(temporaryDirectory("bench-service-"), "service.db")
  return { ...(await startServiceOn(options.main, `file:${databaseFile}`, options.env)), databaseFile }
}

/** `node <main>` with its default configuration on any DATABASE_URL (a Postgres one for row 9). */
export const startServiceOn = async (
  main: string,
  databaseUrl: string,
  env: Record<string, string>
): Promise<Server & { readonly process: ServiceProcess }> => {
  const port = await freePort()
  const service = startService({ port, databaseUrl, env, main })
  track(service.child)
  await waitUntilReady(service, port, 120_000)
  return {
    name: "service",
    port,
    pid: service.pid,
    url: `http://127.0.0.1:${port}`,
    process: service,
    stop: () => stopService(service)
  }
}

/** Spawns `node <main>` without waiting (for the start-up row); registered for clean-up. */
export const spawnServiceProcess = (
  main: string,
  port: number,
  databaseFile: string,
  env: Record<string, string>
): ServiceProcess => {
  const service = startService({ port, databaseUrl: `file:${databaseFile}`, env, main })
  track(service.child)
  return service
}

/**
 * CPU time (user + system, all threads) a process has used so far, in milliseconds, from /proc (Linux;
 * NaN elsewhere). Less moved by a noisy machine than wall-clock rates: what a request costs, not how
 * long it waited for a core.
 */
export const processCpuMs = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name (which may hold spaces) start at its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND
  } catch {
    return Number.NaN
  }
}
/** Linux's USER_HZ, the unit of /proc's CPU times, on every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100

/** Runs `measure` and adds the service's CPU milliseconds per request over it (`requests` from its result). */
export const withCpuPerRequest = async <A>(
  pid: number,
  measure: () => Promise<A>,
  requests: (result: A) => number
): Promise<{ readonly result: A; readonly cpuMsPerRequest: number }> => {
  const before = processCpuMs(pid)
  const result = await measure()
  return { result, cpuMsPerRequest: (processCpuMs(pid) - before) / requests(result) }
}
