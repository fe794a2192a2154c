#!/usr/bin/env node
/**
 * Minimal reproduction of better-sqlite3 ≤ 12's abort on Node ≥ 24.19 headers (issue #28). Its Statement
 * derives from node::ObjectWrap, whose destructor (since 24.19) removes an environment cleanup hook and
 * aborts ("Assertion failed: (env) != nullptr" in RemoveEnvironmentCleanupHook) when the Statement is
 * collected outside a JS context: by a GC that V8 runs from an idle task, or while a thread's
 * environment is torn down. Statements are dropped unfinalised here, with gc() between bursts so that
 * the next idle-time collection is the one that frees them:
 *   1. in a worker, which then exits with Statements still waiting to be collected;
 *   2. on the main thread while idle between bursts (a GC run from V8's own tasks);
 *   3. on the main thread at process.exit() with Statements still waiting to be collected.
 *
 *   node --expose-gc scripts/statement-gc-repro.mjs [better-sqlite3 folder]
 *
 * Prints "statement-gc-repro: ok ..." and exits 0 when nothing aborted; the abort ends it with 134.
 * The folder defaults to the better-sqlite3 this checkout resolves.
 */
import { createRequire } from "node:module"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { isMainThread, Worker, workerData } from "node:worker_threads"

const where = isMainThread ? (process.argv[2] ? resolve(process.argv[2]) : "better-sqlite3") : workerData
const require = createRequire(import.meta.url)
const Database = require(where)
const gc = globalThis.gc
if (typeof gc !== "function") {
  console.error("statement-gc-repro: run with node --expose-gc")
  process.exit(2)
}
const idle = (ms) => new Promise((done) => setTimeout(done, ms))

const db = new Database(":memory:")
let dropped = 0
const burst = (n = 2000) => {
  for (let i = 0; i < n; i++) db.prepare(`select ${i} as x`).get()
  dropped += n
}

if (!isMainThread) {
  for (let round = 0; round < 10; round++) (burst(), gc(), await idle(20))
  burst()
  process.exit(0)
}

const step = (name) => process.stderr.write(`statement-gc-repro: ${name}\n`)
step("1. a worker drops Statements and exits")
for (let w = 0; w < 3; w++) {
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: where })
  const [code] = await new Promise((done, fail) => (worker.once("exit", (c) => done([c])), worker.once("error", fail)))
  if (code !== 0) throw new Error(`worker exited ${code}`)
}
step("2. the main thread drops Statements and idles")
const until = Date.now() + 4000
while (Date.now() < until) (burst(), gc(), burst(), await idle(30))
step("3. the main thread exits with Statements dropped")
burst()
console.log(
  `statement-gc-repro: ok (node ${process.version}, better-sqlite3 ${
    require(`${where}/package.json`).version
  }, ${dropped} Statements dropped)`
)
process.exit(0)
