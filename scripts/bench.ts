/**
 * Throughput and latency of the service against raw node:http on this machine, over loopback only.
 * Usage: npm run bench [-- --seconds 5 --connections 32]
 * Every loop is bounded in time; the service runs as `node dist/main.js` on a temporary SQLite file.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { Agent, createServer, request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { freePort, startService, stopService, waitUntilReady } from "./support/service.js"

const { values } = parseArgs({ options: { seconds: { type: "string" }, connections: { type: "string" } } })
const SECONDS = Number(values.seconds ?? 5)
const CONNECTIONS = Number(values.connections ?? 32)

interface Target {
  readonly name: string
  readonly port: () => number
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: unknown
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

/** Keeps CONNECTIONS requests in flight for SECONDS; returns requests per second and latency percentiles. */
const load = async (target: Target) => {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS })
  const payload = target.body === undefined ? undefined : JSON.stringify(target.body)
  const latencies: Array<number> = []
  let errors = 0
  const deadline = Date.now() + SECONDS * 1000
  const one = () =>
    new Promise<void>((resolve) => {
      const started = performance.now()
      const req = request({
        host: "127.0.0.1",
        port: target.port(),
        method: target.method,
        path: target.path,
        agent,
        headers: payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
      }, (res) => {
        res.resume()
        res.on("end", () => {
          if (res.statusCode !== 200) errors++
          latencies.push(performance.now() - started)
          resolve()
        })
      })
      req.on("error", () => {
        errors++
        resolve()
      })
      req.end(payload)
    })
  const worker = async () => {
    while (Date.now() < deadline) await one()
  }
  await Promise.all(Array.from({ length: CONNECTIONS }, worker))
  agent.destroy()
  latencies.sort((a, b) => a - b)
  return {
    target: target.name,
    "req/s": Math.round(latencies.length / SECONDS),
    "p50 ms": Number(percentile(latencies, 0.5).toFixed(2)),
    "p99 ms": Number(percentile(latencies, 0.99).toFixed(2)),
    errors
  }
}

const main = async () => {
  const toolsBody = JSON.stringify({ success: true, data: [{ name: "add", description: "Add two numbers", tags: [], status: "ready" }] })
  const raw = createServer((req, res) => {
    req.resume()
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(toolsBody))
  })
  const rawPort = await freePort()
  await new Promise<void>((resolve) => raw.listen(rawPort, "127.0.0.1", resolve))

  const dir = mkdtempSync(join(tmpdir(), "bench-"))
  const servicePort = await freePort()
  const service = startService({ port: servicePort, databaseUrl: `file:${join(dir, "bench.db")}`, output: "inherit" })
  try {
    await waitUntilReady(service, servicePort)
    const targets: Array<Target> = [
      { name: "raw node:http", port: () => rawPort, method: "GET", path: "/tools" },
      { name: "GET /tools", port: () => servicePort, method: "GET", path: "/tools" },
      { name: "POST /tools/add/execute", port: () => servicePort, method: "POST", path: "/tools/add/execute", body: { input: { a: 1, b: 2 } } },
      { name: "POST /agents/assistant/text (builtin)", port: () => servicePort, method: "POST", path: "/agents/assistant/text", body: { input: "hi" } },
      { name: "POST /workflows/pipeline/execute", port: () => servicePort, method: "POST", path: "/workflows/pipeline/execute", body: { input: { text: " hi ", n: 21 } } }
    ]
    const results = []
    for (const target of targets) results.push(await load(target))
    console.table(results)
  } finally {
    await stopService(service)
    raw.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
