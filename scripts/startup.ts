/**
 * Start-up time: `node dist/main.js` on an empty SQLite database until its first 200 on GET /agents.
 * Spawns the service `--runs` times (default 10), polls every 5 ms, prints each run and the median.
 * Also reports the CPU the process used until that first 200 (user + system, from /proc), which is
 * less noisy than wall time on a shared machine.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { request } from "node:http"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"

const { values } = parseArgs({ options: { runs: { type: "string" }, main: { type: "string" } } })
const runs = Number(values.runs ?? 10)
const main = values.main ?? "dist/main.js"
const TIMEOUT_MS = 30_000
const CLOCK_TICKS = 100

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0))
    })
  })

const ok = (port: number) =>
  new Promise<boolean>((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/agents", timeout: 1000 }, (res) => {
      res.resume()
      resolve(res.statusCode === 200)
    })
    req.on("error", () => resolve(false))
    req.on("timeout", () => { req.destroy(); resolve(false) })
    req.end()
  })

const cpuMsOf = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
}

const once = async (): Promise<{ wallMs: number; cpuMs: number }> => {
  const dir = mkdtempSync(join(tmpdir(), "startup-"))
  const port = await freePort()
  const started = performance.now()
  const child = spawn(process.execPath, [main, "--port", String(port), "--host", "127.0.0.1", ...(process.env.STARTUP_ARGS ?? "").split(" ").filter(Boolean)], {
    env: { ...process.env, DATABASE_URL: `file:${join(dir, "service.db")}` },
    stdio: ["ignore", "ignore", "inherit"]
  })
  try {
    while (performance.now() - started < TIMEOUT_MS) {
      if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`)
      if (await ok(port)) return { wallMs: performance.now() - started, cpuMs: cpuMsOf(child.pid!) }
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    throw new Error("no 200 within 30 s")
  } finally {
    child.kill("SIGKILL")
    await new Promise((resolve) => child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once("exit", resolve))
    rmSync(dir, { recursive: true, force: true })
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

const results: Array<{ wallMs: number; cpuMs: number }> = []
for (let i = 0; i < runs; i++) {
  const result = await once()
  results.push(result)
  console.log(`run ${i + 1}: ${result.wallMs.toFixed(0)} ms to the first 200, ${result.cpuMs.toFixed(0)} ms CPU`)
}
console.log(`median of ${runs}: ${median(results.map((r) => r.wallMs)).toFixed(0)} ms wall, ${median(results.map((r) => r.cpuMs)).toFixed(0)} ms CPU`)
