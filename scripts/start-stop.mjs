#!/usr/bin/env node
/**
 * `node scripts/start-stop.mjs [N] [path/to/dist/main.js]`: starts the built service N times in a row
 * (100 by default), each on a fresh SQLite file and a free loopback port, waits for /health, sends
 * SIGTERM and waits for the exit. Counts start-up aborts (an exit before /health answered), shutdown
 * aborts (exit code 134 / SIGABRT after serving) and clean runs, and prints them as one JSON line.
 * Used to measure issue #28's abort rate (run it under `scripts/node-line 24`); exits 1 on any abort.
 */
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const runs = Number(process.argv[2] ?? 100)
const main = resolve(process.argv[3] ?? "dist/main.js")
const freePort = () =>
  new Promise((done, fail) => {
    const server = createServer().once("error", fail).listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => done(port))
    })
  })
const aborted = ({ code, signal }) => code === 134 || signal === "SIGABRT"

const counts = { runs, clean: 0, startupAborts: 0, shutdownAborts: 0, otherFailures: 0, node: process.version }
for (let i = 0; i < runs; i++) {
  const dir = mkdtempSync(join(tmpdir(), "start-stop-"))
  const port = await freePort()
  const { AI_API_KEY, AI_BASE_URL, AI_MODEL, OPENAI_API_KEY, ANTHROPIC_API_KEY, PORT, ...env } = process.env
  const child = spawn(process.execPath, [main, "--port", String(port)], {
    env: { ...env, DATABASE_URL: `file:${join(dir, "service.db")}`, AI_PROVIDER: "builtin", LOG_LEVEL: "warn" },
    stdio: ["ignore", "ignore", "pipe"]
  })
  let stderr = ""
  child.stderr.on("data", (chunk) => (stderr = (stderr + chunk).slice(-4000)))
  const exited = new Promise((done) => child.once("exit", (code, signal) => done({ code, signal })))
  let up = false
  const deadline = Date.now() + 60_000
  while (!up && child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
    up = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.status === 200, () => false)
    if (!up) await new Promise((done) => setTimeout(done, 25))
  }
  if (up) child.kill("SIGTERM")
  else if (child.exitCode === null) child.kill("SIGKILL")
  const exit = await exited
  if (!up) {
    if (aborted(exit)) counts.startupAborts++
    else counts.otherFailures++
  } else if (aborted(exit)) counts.shutdownAborts++
  else if (exit.code === 0) counts.clean++
  else counts.otherFailures++
  if (exit.code !== 0) {
    process.stderr.write(
      `run ${i + 1}: ${up ? "after serving" : "before /health"} exit ${exit.code ?? exit.signal}\n${
        stderr.split("\n").slice(0, 3).join("\n")
      }\n`
    )
  }
  rmSync(dir, { recursive: true, force: true })
}
console.log(JSON.stringify(counts))
process.exit(counts.clean === runs ? 0 : 1)
