/**
 * The built service as a child process, and the HTTP calls the load scripts make to it; loopback only.
 * Shared by bench, chaos and soak (and the chaos test).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFile } from "node:fs/promises"
import { createServer } from "node:net"
import { join } from "node:path"

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** Variables the service reads that must come from the script, not from the caller's shell. */
const SERVICE_VARIABLES = [
  "AI_API_KEY",
  "AI_BASE_URL",
  "AI_MODEL",
  "AI_PROVIDER",
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "DATABASE_URL",
  "JWT_SECRET",
  "JWT_ALLOW_NO_EXP",
  "SERVICE_CONSOLE_ACCESS_KEY",
  "SERVICE_PUBLIC_URL",
  "LOG_LEVEL",
  "NODE_ENV",
  "PORT",
  "OTEL_EXPORTER_OTLP_ENDPOINT",
  "HTTP_HEADERS_TIMEOUT_SECONDS",
  "HTTP_REQUEST_TIMEOUT_SECONDS",
  "HTTP_MAX_CONNECTIONS_PER_CLIENT"
]

export interface ServiceOptions {
  readonly port: number
  readonly databaseUrl: string
  /** Path of the built entry point; `dist/main.js` under the working directory by default. */
  readonly main?: string
  readonly logLevel?: string
  /** Where the service's output goes: kept (the last 64 KiB, for reports) or inherited. */
  readonly output?: "keep" | "inherit"
  /** Variables set last (e.g. the model: AI_PROVIDER, AI_BASE_URL); the built-in model otherwise. */
  readonly env?: Readonly<Record<string, string>>
}

export interface ServiceProcess {
  readonly child: ChildProcess
  readonly pid: number
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  /** The last 64 KiB the process wrote to stdout and stderr. */
  readonly output: () => string
}

const OUTPUT_KEPT = 64 * 1024

export const startService = (options: ServiceOptions): ServiceProcess => {
  const inherited = { ...process.env }
  for (const name of SERVICE_VARIABLES) delete inherited[name]
  const child = spawn(process.execPath, [
    options.main ?? join(process.cwd(), "dist/main.js"),
    "--port",
    String(options.port)
  ], {
    env: {
      ...inherited,
      DATABASE_URL: options.databaseUrl,
      LOG_LEVEL: options.logLevel ?? "warn",
      AI_PROVIDER: "builtin",
      ...options.env
    },
    stdio: options.output === "inherit" ? ["ignore", "inherit", "inherit"] : ["ignore", "pipe", "pipe"]
  })
  let output = ""
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_KEPT)
  }
  child.stdout?.on("data", keep)
  child.stderr?.on("data", keep)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal }))
  )
  return { child, pid: child.pid ?? -1, exited, output: () => output }
}

export const isAlive = (service: ServiceProcess) => service.child.exitCode === null && service.child.signalCode === null

/** SIGKILL, then waits for the exit (a no-op for a process that has already exited). */
export const killHard = async (service: ServiceProcess) => {
  if (isAlive(service)) service.child.kill("SIGKILL")
  await service.exited
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
export const stopService = async (service: ServiceProcess, graceMs = 10_000) => {
  if (!isAlive(service)) return
  service.child.kill("SIGTERM")
  const stopped = await Promise.race([service.exited.then(() => true), sleep(graceMs).then(() => false)])
  if (!stopped) await killHard(service)
}

/** Polls until the service answers HTTP; fails after `ms` or as soon as the process exits. */
export const waitUntilReady = async (service: ServiceProcess, port: number, ms = 60_000): Promise<void> => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (!isAlive(service)) throw new Error(`the service exited during start-up:\n${service.output()}`)
    const up = await fetch(`http://127.0.0.1:${port}/doc`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => r.ok,
      () => false
    )
    if (up) return
    await sleep(100)
  }
  throw new Error(`the service did not answer on port ${port} within ${ms} ms:\n${service.output()}`)
}

/** A finished HTTP exchange, or `down` when no answer came (refused, reset, timed out). */
export type Reply =
  | { readonly kind: "answer"; readonly status: number; readonly body: any }
  | { readonly kind: "down"; readonly reason: string }

/** One JSON request; never throws. */
export const call = async (
  base: string,
  method: "GET" | "POST",
  path: string,
  body?: unknown,
  timeoutMs = 30_000
): Promise<Reply> => {
  try {
    const response = await fetch(`${base}${path}`, {
      method,
      signal: AbortSignal.timeout(timeoutMs),
      ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    })
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON: kept as text for the report
    }
    return { kind: "answer", status: response.status, body: parsed }
  } catch (error) {
    if ((error as Error).name === "TimeoutError") return { kind: "down", reason: "timeout" }
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    return { kind: "down", reason: cause?.code ?? cause?.message ?? String(error) }
  }
}

/** Resident set size of a process in bytes (Linux), from /proc/<pid>/status. */
export const residentBytes = async (pid: number): Promise<number> => {
  const status = await readFile(`/proc/${pid}/status`, "utf8")
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (kb === null) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(kb[1]) * 1024
}
