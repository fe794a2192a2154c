/**
 * The agent relay measured against the OpenAI-compatible fake (issue #10 rows 2, 3, 4 and 7b), on loopback.
 * Usage: node .build/scripts/agent-relay.js [--rows latency,throughput,first-delta,streams] [--requests 400]
 *   [--seconds 5] [--connections 50] [--streams 2000] [--rounds 1] [--settle 10] [--main dist/main.js]
 *
 * The fake runs as its own process; the service is `node dist/main.js` in its default configuration
 * (tracing on, LOG_LEVEL unset) with AI_PROVIDER=openai-compatible pointed at the fake, on a temporary SQLite file.
 * Direct calls send the fake the chat request the service sends for the same input (the `assistant`
 * agent: its instructions, its two tools, the default settings). Besides wall times it reports the
 * service's CPU per request (utime + stime from /proc over the row).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { Agent, request } from "node:http"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { freePort, residentBytes, sleep } from "./support/service.js"

const { values } = parseArgs({
  options: {
    rows: { type: "string" },
    requests: { type: "string" },
    seconds: { type: "string" },
    connections: { type: "string" },
    streams: { type: "string" },
    main: { type: "string" },
    rounds: { type: "string" },
    settle: { type: "string" }
  }
})
const ROWS = new Set((values.rows ?? "latency,throughput,first-delta,streams").split(","))
const REQUESTS = Number(values.requests ?? 400)
const SECONDS = Number(values.seconds ?? 5)
const CONNECTIONS = Number(values.connections ?? 50)
const STREAMS = Number(values.streams ?? 2000)
/** Rounds of the streams row in the same service: a leak grows from round to round. */
const ROUNDS = Number(values.rounds ?? 1)
/** Seconds over which the lowest RSS after the streams is taken. */
const SETTLE = Number(values.settle ?? 10)
const autocannon = createRequire(import.meta.url)("autocannon") as (options: object) => Promise<any>

const INSTRUCTIONS = "You are a helpful assistant. Use the get_weather tool for weather questions and the add tool " +
  "for sums. Answer briefly."
const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Get the current weather for a location",
      parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] }
    }
  },
  {
    type: "function",
    function: {
      name: "add",
      description: "Add two numbers",
      parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] }
    }
  }
]
const chatBody = (input: string, stream: boolean) =>
  JSON.stringify({
    model: "fake-model",
    max_tokens: 4000,
    temperature: 0.7,
    messages: [{ role: "system", content: INSTRUCTIONS }, { role: "user", content: input }],
    tools: TOOLS,
    tool_choice: "auto",
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
  })
const agentBody = (input: string) => JSON.stringify({ input })

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
const round = (n: number, digits = 2) => Number(n.toFixed(digits))

/** utime + stime of a process in ms (Linux, USER_HZ 100). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}

interface Timed {
  readonly total: number
  /** When the first chunk matching `firstMarker` arrived, from the start of the request. */
  readonly first: number
}

/** One request; resolves with its wall time and the time to the first chunk containing `marker`. */
const timed = (agent: Agent, port: number, path: string, body: string, marker?: string) =>
  new Promise<Timed>((resolve, reject) => {
    const started = performance.now()
    let first = -1
    const req = request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path,
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      let seen = ""
      res.on("data", (chunk: Buffer) => {
        if (first >= 0 || marker === undefined) return
        seen += chunk.toString()
        if (seen.includes(marker)) first = performance.now() - started
      })
      res.on("end", () => {
        if (res.statusCode !== 200) return reject(new Error(`${path}: status ${res.statusCode}: ${seen}`))
        resolve({ total: performance.now() - started, first })
      })
    })
    req.on("error", reject)
    req.end(body)
  })

const summary = (values: Array<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return { p50: round(percentile(sorted, 0.5)), p99: round(percentile(sorted, 0.99)) }
}

const startFake = async (port: number) => {
  const child = spawn(process.execPath, [join(process.cwd(), ".build/scripts/fake-openai.js"), "--port", String(port)], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()))
  return child
}

const startRelay = async (port: number, fakePort: number, databaseUrl: string) => {
  const env: Record<string, string | undefined> = { ...process.env }
  for (const name of ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JWT_SECRET", "SERVICE_CONSOLE_ACCESS_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT", "NODE_ENV", "LOG_LEVEL"]) {
    delete env[name]
  }
  const child = spawn(process.execPath, [...(process.env.RELAY_NODE_ARGS?.split(" ").filter(Boolean) ?? []), values.main ?? join(process.cwd(), "dist/main.js"), "--port", String(port)], {
    env: {
      ...env,
      DATABASE_URL: databaseUrl,
      AI_PROVIDER: "openai-compatible",
      AI_BASE_URL: `http://127.0.0.1:${fakePort}/v1`,
      AI_MODEL: "fake-model",
      AI_API_KEY: "bench"
    },
    // Default configuration (LOG_LEVEL info): the per-call log lines are written, to nowhere.
    stdio: ["ignore", process.env.RELAY_STDOUT === "inherit" ? "inherit" : "ignore", "inherit"]
  })
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    const up = await fetch(`http://127.0.0.1:${port}/agents`).then((r) => r.ok, () => false)
    if (up) return child
    await sleep(100)
  }
  throw new Error("the service did not start")
}

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
  })

/** Serial requests, direct and relayed taking turns, so both see the same machine. */
const latency = async (fakePort: number, port: number, stream: boolean) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const direct: Array<Timed> = []
  const relayed: Array<Timed> = []
  const fakeMarker = stream ? "\"content\":\"You" : undefined
  const relayMarker = stream ? "text-delta" : undefined
  const path = stream ? "/agents/assistant/stream" : "/agents/assistant/text"
  for (let i = 0; i < 20; i++) {
    await timed(agent, fakePort, "/v1/chat/completions", chatBody("hello there", stream), fakeMarker)
    await timed(agent, port, path, agentBody("hello there"), relayMarker)
  }
  const cpuBefore = cpuMs(servicePid)
  for (let i = 0; i < REQUESTS; i++) {
    direct.push(await timed(agent, fakePort, "/v1/chat/completions", chatBody("hello there", stream), fakeMarker))
    relayed.push(await timed(agent, port, path, agentBody("hello there"), relayMarker))
  }
  const cpu = (cpuMs(servicePid) - cpuBefore) / REQUESTS
  agent.destroy()
  const pick = (t: Timed) => (stream ? t.first : t.total)
  const d = summary(direct.map(pick))
  const r = summary(relayed.map(pick))
  return {
    row: stream ? "/stream first text-delta, one at a time" : "POST /text, one at a time",
    "direct p50": d.p50,
    "direct p99": d.p99,
    "relay p50": r.p50,
    "relay p99": r.p99,
    "added p50": round(r.p50 - d.p50),
    "added p99": round(r.p99 - d.p99),
    "service CPU ms/req": round(cpu)
  }
}

const cannon = (port: number, path: string, body: string) =>
  autocannon({
    url: `http://127.0.0.1:${port}${path}`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    connections: CONNECTIONS,
    duration: SECONDS
  })

const throughput = async (fakePort: number, port: number) => {
  await cannon(fakePort, "/v1/chat/completions", chatBody("hello there", false))
  const fake = await cannon(fakePort, "/v1/chat/completions", chatBody("hello there", false))
  await cannon(port, "/agents/assistant/text", agentBody("hello there"))
  const cpuBefore = cpuMs(servicePid)
  const relay = await cannon(port, "/agents/assistant/text", agentBody("hello there"))
  const cpu = (cpuMs(servicePid) - cpuBefore) / Math.max(1, relay.requests.total)
  return {
    row: `POST /text at ${CONNECTIONS} connections`,
    "fake req/s": round(fake.requests.average, 0),
    "relay req/s": round(relay.requests.average, 0),
    ratio: round(relay.requests.average / fake.requests.average, 4),
    "relay non-2xx": relay.non2xx + relay.errors,
    "service CPU ms/req": round(cpu)
  }
}

/** STREAMS slow streams open at once (the fake answers `slowly`: 50 words, 200 ms apart). */
const openStreams = async (port: number) => {
  const mb = async () => round((await residentBytes(servicePid)) / 2 ** 20, 1)
  const idleLowest = async (ms: number) => {
    let lowest = Infinity
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      lowest = Math.min(lowest, await mb())
      await sleep(250)
    }
    return lowest
  }
  const idle = await idleLowest(2_000)
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity })
  const body = agentBody("please answer slowly")
  let firstFrames = 0
  const requests: Array<ReturnType<typeof request>> = []
  const ended = Array.from({ length: STREAMS }, () =>
    new Promise<void>((resolve) => {
      const req = request({
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/agents/assistant/stream",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
      }, (res) => {
        let counted = false
        res.on("data", () => {
          if (!counted) firstFrames++
          counted = true
        })
        res.on("end", resolve)
        res.on("error", () => resolve())
      })
      req.on("error", () => resolve())
      req.on("close", () => resolve())
      req.end(body)
      requests.push(req)
    }))
  const deadline = Date.now() + 60_000
  while (firstFrames < STREAMS && Date.now() < deadline) await sleep(100)
  let peak = await mb()
  for (let i = 0; i < 8; i++) {
    await sleep(250)
    peak = Math.max(peak, await mb())
  }
  const open = firstFrames
  for (const req of requests) req.destroy()
  await Promise.all(ended)
  agent.destroy()
  await sleep(3_000)
  const after = await idleLowest(SETTLE * 1000)
  if (process.env.RELAY_REPORT) {
    process.kill(servicePid, "SIGUSR2")
    await sleep(3_000)
  }
  return {
    row: `${STREAMS} open agent streams (slow fake)`,
    "streams with a first frame": open,
    "idle MB": idle,
    "peak MB while open": peak,
    [`after MB (lowest of ${SETTLE} s)`]: after,
    "after / idle": round(after / idle, 3)
  }
}

let servicePid = -1

const main = async () => {
  const dir = mkdtempSync(join(tmpdir(), "relay-"))
  const fakePort = await freePort()
  const port = await freePort()
  const fake = await startFake(fakePort)
  const service = await startRelay(port, fakePort, `file:${join(dir, "relay.db")}`)
  servicePid = service.pid!
  try {
    const results: Array<object> = []
    if (ROWS.has("latency")) results.push(await latency(fakePort, port, false))
    if (ROWS.has("first-delta")) results.push(await latency(fakePort, port, true))
    if (ROWS.has("throughput")) results.push(await throughput(fakePort, port))
    for (const result of results) console.table([result])
    if (ROWS.has("streams")) for (let round = 0; round < ROUNDS; round++) console.table([await openStreams(port)])
  } finally {
    await stop(service)
    await stop(fake)
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
