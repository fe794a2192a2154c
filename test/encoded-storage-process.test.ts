import { expect, it } from "@effect/vitest"
import { existsSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { fixtureApp, freePort, pollUntil } from "./support/process.js"

// Issue #30 (settled 2): typed data survives a crash. The app (test/fixtures/encoded-storage/app.mjs)
// has a workflow whose input holds a `Schema.Date` and whose first step's outputSchema does too; its
// second step fails unless `input.when`, `data.at` and `steps.stamp.at` are Dates.

const APP = fileURLToPath(new URL("./fixtures/encoded-storage/app.mjs", import.meta.url))

const { start, tempDir } = fixtureApp(APP)

it(
  "SIGKILL between two steps: after a restart on the same SQLite file the next step still gets Dates (input, data, steps)",
  async () => {
    const dir = tempDir("service-encoded-")
    const databaseUrl = `file:${join(dir, "encoded.db")}`
    const gate = join(dir, "gate")
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const state = () =>
      fetch(`${base}/workflows/dated/executions/dated-1/state`).then((r) => r.json()).then((b) => b.data)

    const first = await start(port, databaseUrl)
    const run = await fetch(`${base}/workflows/dated/run`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: { when: "2026-01-02T03:04:05.000Z", gate }, options: { executionId: "dated-1" } })
    })
    expect(run.status).toBe(201)
    // The first step's output is committed once the second has started.
    await pollUntil("the second step starts", () => existsSync(`${gate}.started`), (started) => started, 60_000)
    first.child.kill("SIGKILL")
    await first.exit
    rmSync(`${gate}.started`)
    writeFileSync(gate, "")

    await start(port, databaseUrl)
    const settled = await pollUntil("the recovered execution settles", state, (s) => s.status !== "running", 60_000)
    // The HTTP API shows JSON as before: a Date as its ISO string (its encoded form).
    expect(settled).toMatchObject({
      status: "completed",
      input: { when: "2026-01-02T03:04:05.000Z", gate },
      result: { when: "2026-01-02T03:04:05.000Z", at: "2026-01-03T03:04:05.000Z" }
    })
    // The second step ran again in the restarted process.
    expect(existsSync(`${gate}.started`)).toBe(true)
  },
  120_000
)
