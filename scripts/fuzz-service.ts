/**
 * The service under fuzz: `node dist/main.js` in a child process on a temporary SQLite file and working
 * directory, open or with JWT authentication, and a raw HTTP client for it.
 */
import { SignJWT } from "jose"
import { type ChildProcess, spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { Agent, request } from "node:http"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { AuthKind } from "./fuzz-cases.js"
import type { Outcome } from "./fuzz-oracle.js"

export interface Service {
  readonly port: number
  readonly child: ChildProcess
  /** The end of what the process wrote on stderr. */
  readonly stderrTail: () => string
  readonly authorization: (kind: AuthKind) => string | undefined
  readonly stop: () => Promise<void>
}

const SECRET = "fuzz-secret-that-is-long-enough-for-hs256"

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

// Issued an hour before it expires, or now if that is sooner: an `iat` ahead of the clock is refused.
const sign = (secret: string, expiresAt: number) =>
  new SignJWT({ sub: "fuzz" }).setProtectedHeader({ alg: "HS256" })
    .setIssuedAt(Math.min(expiresAt - 3600, Math.floor(Date.now() / 1000))).setExpirationTime(expiresAt)
    .sign(new TextEncoder().encode(secret))

const authorizations = async (): Promise<Record<AuthKind, string | undefined>> => {
  const now = Math.floor(Date.now() / 1000)
  return {
    none: undefined,
    valid: `Bearer ${await sign(SECRET, now + 6 * 3600)}`,
    garbage: "Bearer not.a.jwt",
    "wrong-secret": `Bearer ${await sign(`${SECRET}-but-another`, now + 3600)}`,
    expired: `Bearer ${await sign(SECRET, now - 60)}`,
    "empty-bearer": "Bearer ",
    basic: "Basic Zm9vOmJhcg=="
  }
}

/** Environment of the child: none of the caller's service settings, a registry that is never reached. */
const childEnv = (dir: string, closedPort: number) => {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([key]) =>
      !/^(AI_|OPENAI_|ANTHROPIC_|DATABASE_URL$|JWT_|HTTP_(HEADERS|REQUEST)_TIMEOUT_SECONDS$|HTTP_MAX_CONNECTIONS_PER_CLIENT$|SERVICE_|LOG_LEVEL$|NODE_ENV$|PORT$|OTEL_|npm_config_registry$|NPM_CONFIG_REGISTRY$)/
        .test(key)
    )
  )
  return {
    ...inherited,
    AI_PROVIDER: "builtin",
    DATABASE_URL: `file:${join(dir, "fuzz.db")}`,
    LOG_LEVEL: "error",
    // POST /updates must never install anything: every registry lookup fails at once.
    npm_config_registry: `http://127.0.0.1:${closedPort}/`
  }
}

const waitForHttp = async (port: number, child: ChildProcess, ms: number) => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline && child.exitCode === null) {
    const up = await fetch(`http://127.0.0.1:${port}/doc`).then(() => true, () => false)
    if (up) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`the service did not answer on ${port} within ${ms} ms (exit code ${child.exitCode})`)
}

/** Starts `node <root>/dist/main.js`; with `jwt`, execution routes need a token signed with the fuzz's secret. */
export const startService = async (options: { readonly root: string; readonly jwt: boolean }): Promise<Service> => {
  const dir = mkdtempSync(join(tmpdir(), "fuzz-"))
  const [port, closedPort] = [await freePort(), await freePort()]
  const args = [join(options.root, "dist/main.js"), "--port", String(port)]
  if (options.jwt) {
    writeFileSync(join(dir, "config.json"), JSON.stringify({ auth: { secret: SECRET } }))
    args.push("--config", join(dir, "config.json"))
  }
  // A small heap: a request that makes the service build something huge ends it quickly.
  const child = spawn(process.execPath, ["--max-old-space-size=1024", ...args], {
    cwd: dir,
    env: childEnv(dir, closedPort),
    stdio: ["ignore", "ignore", "pipe"]
  })
  let stderr = ""
  child.stderr!.on("data", (chunk) => (stderr = (stderr + String(chunk)).slice(-4_000)))
  const exited = once(child, "exit")
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
      await exited
      clearTimeout(timer)
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitForHttp(port, child, 60_000)
  } catch (error) {
    await stop()
    throw new Error(`${(error as Error).message}\n${stderr}`)
  }
  const auth = await authorizations()
  return { port, child, stderrTail: () => stderr, authorization: (kind) => auth[kind], stop }
}

export interface Sent {
  readonly path: string
  readonly method?: string
  readonly body?: string | undefined
  readonly authorization?: string | undefined
  readonly chunked?: boolean
  /** Sends the console's `x-service-dev: true` (console writes need it outside production). */
  readonly console?: boolean
}

const MAX_BODY = 32 * 1024 * 1024

// Keep-alive, as browsers and curl do: Node's server then drains a body it answered before reading
// (a 401), where with `connection: close` it closes on the client still sending (EPIPE, answer lost).
const agent = new Agent({ keepAlive: true, maxSockets: 16 })

/** One request on a fresh connection; an event stream is cut after its headers; no answer in time is an error. */
export const send = (port: number, sent: Sent, timeoutMs: number): Promise<Outcome> =>
  new Promise((resolve) => {
    let settled = false
    const settle = (outcome: Outcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      // A connection with a request still being sent, or a stream still open, is not reused.
      if (!("answer" in outcome) || outcome.answer.body === undefined || !req.writableFinished) req.destroy()
      resolve(outcome)
    }
    const headers: Record<string, string | number> = { accept: "application/json, text/event-stream" }
    if (sent.body !== undefined) {
      headers["content-type"] = "application/json"
      if (!sent.chunked) headers["content-length"] = Buffer.byteLength(sent.body)
    }
    if (sent.authorization !== undefined) headers.authorization = sent.authorization
    if (sent.console) headers["x-service-dev"] = "true"
    const req = request({ host: "127.0.0.1", port, method: sent.method ?? "POST", path: sent.path, agent, headers })
    const timer = setTimeout(() => {
      settle({ error: `no answer within ${timeoutMs} ms` })
    }, timeoutMs)
    req.on("error", (error: NodeJS.ErrnoException) => {
      // A kept-alive connection the server closed as it was reused: what Node's docs say to retry.
      if (req.reusedSocket && error.code === "ECONNRESET" && !settled) {
        settled = true
        clearTimeout(timer)
        resolve(send(port, sent, timeoutMs))
      } else settle({ error: `connection error: ${error.code ?? error.message}` })
    })
    req.on("response", (res) => {
      const status = res.statusCode ?? 0
      const contentType = String(res.headers["content-type"] ?? "")
      if (contentType.includes("text/event-stream")) {
        settle({ answer: { status, contentType, body: undefined } })
        return
      }
      const chunks: Array<Buffer> = []
      let size = 0
      res.on("data", (chunk: Buffer) => {
        size += chunk.length
        if (size > MAX_BODY) {
          settle({ error: `answer larger than ${MAX_BODY} bytes` })
        } else chunks.push(chunk)
      })
      res.on("end", () => settle({ answer: { status, contentType, body: Buffer.concat(chunks).toString("utf8") } }))
      res.on("error", (error: NodeJS.ErrnoException) => settle({ error: `answer cut: ${error.code ?? error.message}` }))
    })
    if (sent.body !== undefined && sent.chunked) req.write(sent.body)
    req.end(sent.chunked ? undefined : sent.body)
  })

/** GET `path` and the envelope's data, or undefined when it is not a 200 envelope. */
export const getData = async (service: Service, path: string, timeoutMs = 30_000): Promise<unknown> => {
  const outcome = await send(
    service.port,
    { method: "GET", path, authorization: service.authorization("valid") },
    timeoutMs
  )
  if ("error" in outcome || outcome.answer.status !== 200 || outcome.answer.body === undefined) return undefined
  return (JSON.parse(outcome.answer.body) as { data?: unknown }).data
}

/** POST a JSON body with a valid token; the envelope's data on a 2xx, else undefined. */
export const postData = async (service: Service, path: string, body: unknown, timeoutMs = 30_000): Promise<unknown> => {
  const outcome = await send(service.port, {
    path,
    body: JSON.stringify(body),
    authorization: service.authorization("valid")
  }, timeoutMs)
  if ("error" in outcome || outcome.answer.status >= 300 || outcome.answer.body === undefined) return undefined
  return (JSON.parse(outcome.answer.body) as { data?: unknown }).data
}
