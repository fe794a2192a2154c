/**
 * GET /workflows/executions with many stored executions: seeds `--count` (default 100,000) completed
 * `pipeline` executions through the ExecutionStore (in transactions of 1,000), starts `node dist/main.js`
 * on that database and times `--runs` sequential requests for a filtered page of 50 at offset 0 and at
 * the deepest full page. SQLite in a temporary file by default; `--database-url postgres://...` seeds an
 * existing, empty Postgres database instead; `--seeded` skips seeding (a database seeded by an earlier run).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { SqlLive } from "../src/storage/Sql.js"
import { type Execution, ExecutionStore, ExecutionStoreLive } from "../src/workflows/ExecutionStore.js"

const { values } = parseArgs({
  options: { seeded: { type: "boolean" }, count: { type: "string" }, runs: { type: "string" }, "database-url": { type: "string" }, port: { type: "string" } }
})
const count = Number(values.count ?? 100_000)
const runs = Number(values.runs ?? 200)
const port = Number(values.port ?? 3199)
const dir = mkdtempSync(join(tmpdir(), "listing-"))
const databaseUrl = values["database-url"] ?? `file:${join(dir, "service.db")}`
const BATCH = 1_000
const START = Date.parse("2026-01-01T00:00:00.000Z")

const execution = (i: number): Execution => {
  const at = new Date(START + i * 1000).toISOString()
  return {
    id: `seed-${String(i).padStart(7, "0")}`,
    workflowId: "pipeline",
    workflowName: "Text pipeline",
    status: "completed",
    input: { text: "hello", n: i },
    context: {},
    user: null,
    stepIndex: 7,
    stepData: { normalize: { text: "hello" }, upper: { upper: "HELLO" } },
    currentData: { text: "hello" },
    output: { text: "hello", upper: "HELLO", length: 5 },
    metadata: { traceId: "0".repeat(32), spanId: "0".repeat(16) },
    version: 1,
    lastSeq: 1,
    createdAt: at,
    updatedAt: at
  }
}

const seed = Effect.gen(function*() {
  const store = yield* ExecutionStore
  const sql = yield* SqlClient.SqlClient
  for (let from = 0; from < count; from += BATCH) {
    yield* sql.withTransaction(Effect.forEach(
      Array.from({ length: Math.min(BATCH, count - from) }, (_, k) => execution(from + k)),
      (e) => store.create(e, { type: "workflow-start", executionId: e.id, from: "workflow", timestamp: e.createdAt, status: "running", input: e.input }),
      { discard: true }
    ))
  }
}).pipe(Effect.provide(ExecutionStoreLive.pipe(Layer.provideMerge(SqlLive(databaseUrl)))))

const seeded = performance.now()
if (!values.seeded) await Effect.runPromise(seed)
else console.log("(already seeded)")
if (!values.seeded) console.log(`seeded ${count} executions in ${((performance.now() - seeded) / 1000).toFixed(1)} s (${databaseUrl.startsWith("file:") ? "SQLite" : "Postgres"})`)

const child = spawn(process.execPath, ["dist/main.js", "--port", String(port), "--host", "127.0.0.1"], {
  env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "error" },
  stdio: ["ignore", "ignore", "inherit"]
})
const base = `http://127.0.0.1:${port}`
try {
  const deadline = Date.now() + 30_000
  while (!(await fetch(`${base}/agents`).then((r) => r.ok, () => false))) {
    if (Date.now() > deadline) throw new Error("service did not start")
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]
  for (const offset of [0, count - 50]) {
    const url = `${base}/workflows/executions?workflowId=pipeline&status=completed&limit=50&offset=${offset}`
    const times: Array<number> = []
    let first: ReadonlyArray<{ id: string }> = []
    for (let i = 0; i < runs + 10; i++) {
      const started = performance.now()
      const response = await fetch(url)
      const body = await response.json() as { data: ReadonlyArray<{ id: string }> }
      if (i >= 10) times.push(performance.now() - started)
      first = body.data
    }
    const sorted = times.sort((a, b) => a - b)
    console.log(`offset ${offset}: ${first.length} rows (${first[0]?.id} .. ${first.at(-1)?.id}), p50 ${percentile(sorted, 0.5).toFixed(1)} ms, p99 ${percentile(sorted, 0.99).toFixed(1)} ms`)
  }
} finally {
  child.kill("SIGTERM")
  if (values["database-url"] === undefined) rmSync(dir, { recursive: true, force: true })
}
