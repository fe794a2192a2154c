import { expect, it } from "@effect/vitest"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { fixtureApp, freePort, pollUntil } from "./support/process.js"

// Issue #31 (item 2, settled 4): each item of an andForEach is committed as it completes, so after a
// kill -9 mid-loop a restarted process runs only the unfinished items. The app
// (test/fixtures/loops/app.mjs) appends each item's path to a side file whenever the item runs.

const APP = fileURLToPath(new URL("./fixtures/loops/app.mjs", import.meta.url))

const { start, tempDir } = fixtureApp(APP)

const runsOf = (log: string) => {
  const counts = new Map<string, number>()
  if (!existsSync(log)) return counts
  for (const line of readFileSync(log, "utf8").split("\n").filter(Boolean)) {
    counts.set(line, (counts.get(line) ?? 0) + 1)
  }
  return counts
}

it("SIGKILL mid-loop: after a restart on the same SQLite file the committed items are not run again", async () => {
  const dir = tempDir("service-loops-")
  const databaseUrl = `file:${join(dir, "loops.db")}`
  const log = join(dir, "runs.log")
  const gate = join(dir, "gate")
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const record = () => fetch(`${base}/workflows/executions/loop-1`).then((r) => r.json()).then((b) => b.data)

  const first = await start(port, databaseUrl)
  const run = await fetch(`${base}/workflows/looped/run`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input: { count: 20, log, gate, from: 8 }, options: { executionId: "loop-1" } })
  })
  expect(run.status).toBe(201)
  // Items 0-7 complete (committed), 8-11 have started and wait for the gate.
  await pollUntil(
    "8 items committed and 4 waiting",
    async () => ({
      committed: ((await record())?.events ?? []).filter((e: any) => e.path !== undefined).length,
      runs: runsOf(log).size
    }),
    (seen) => seen.committed >= 8 && seen.runs >= 12
  )
  first.child.kill("SIGKILL")
  await first.exit
  writeFileSync(gate, "")

  await start(port, databaseUrl)
  const state = await pollUntil(
    "the loop completes after the restart",
    () => fetch(`${base}/workflows/looped/executions/loop-1/state`).then((r) => r.json()).then((b) => b.data),
    (state) => state.status !== "running",
    60_000
  )
  expect(state).toMatchObject({ status: "completed", result: Array.from({ length: 20 }, (_, i) => i * 2) })
  const runs = runsOf(log)
  for (let i = 0; i < 8; i++) expect(runs.get(`lines[${i}]`), `lines[${i}]`).toBe(1)
  // The items that were running when the process died ran again; each item ran at most twice.
  for (let i = 8; i < 12; i++) expect(runs.get(`lines[${i}]`), `lines[${i}]`).toBe(2)
  for (let i = 12; i < 20; i++) expect(runs.get(`lines[${i}]`), `lines[${i}]`).toBe(1)
  const paths = ((await record()).events as Array<any>).flatMap((e) => (e.path === undefined ? [] : [e.path]))
  expect(new Set(paths).size).toBe(20)
  expect(paths).toHaveLength(20)
}, 120_000)
