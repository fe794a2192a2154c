import { expect, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { fixtureApp, freePort, pollUntil } from "./support/process.js"

// Issue #31 (settled 10): a kill -9 during a retry's back-off keeps the attempt count and the due
// time. The app (test/fixtures/step-retry/app.mjs) fails its step twice, with back-offs of 0.5 s and 6 s.

const APP = fileURLToPath(new URL("./fixtures/step-retry/app.mjs", import.meta.url))

const { start, tempDir } = fixtureApp(APP)

interface Attempt {
  readonly executionId: string
  readonly path: string
  readonly attempt: number
  readonly at: number
}

it(
  "SIGKILL during a back-off: after a restart on the same SQLite file the attempts go on (3, not 1) at the committed due time",
  async () => {
    const dir = tempDir("service-retry-")
    const databaseUrl = `file:${join(dir, "retry.db")}`
    const log = join(dir, "attempts.jsonl")
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const events = async (): Promise<Array<any>> => {
      const listing = await fetch(`${base}/workflows/executions?workflowId=flaky-call`).then((r) => r.json())
      return listing.data.find((e: any) => e.id === "k-1")?.events ?? []
    }
    const attempts = (): Array<Attempt> =>
      readFileSync(log, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))

    const first = await start(port, databaseUrl)
    const run = await fetch(`${base}/workflows/flaky-call/run`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: { log }, options: { executionId: "k-1" } })
    })
    expect(run.status).toBe(201)
    const retried = await pollUntil(
      "the second retry is committed",
      events,
      (list) => list.some((e) => e.type === "step-retry" && e.attempt === 2),
      60_000
    )
    first.child.kill("SIGKILL")
    await first.exit
    const second = retried.find((e) => e.type === "step-retry" && e.attempt === 2)
    expect(second).toMatchObject({ delayMs: 6000, errorDetail: { _tag: "Unavailable" } })
    const dueAt = Date.parse(second.retryAt)
    // Down for 2 s at least: a restarted back-off that waited its whole delay again would be 2 s late or more.
    await pollUntil("2 s of downtime", () => Date.now(), (now) => now >= Date.parse(second.startTime) + 2000, 10_000)

    await start(port, databaseUrl)
    const ready = Date.now()
    const state = () =>
      fetch(`${base}/workflows/flaky-call/executions/k-1/state`).then((r) => r.json()).then((b) => b.data)
    const settled = await pollUntil("the recovered execution settles", state, (s) => s.status !== "running", 60_000)
    expect(settled).toMatchObject({ status: "completed", result: { attempt: 3 } })

    const made = attempts()
    // No attempt ran twice, none was lost, and the count went on from the committed one.
    expect(made.map((a) => a.attempt)).toEqual([1, 2, 3])
    expect(made.every((a) => a.executionId === "k-1" && a.path === "call")).toBe(true)
    const third = made[2]
    // Not before the committed due time; and once it was due, at once (not another 6 s from the restart).
    expect(third.at).toBeGreaterThanOrEqual(dueAt)
    expect(third.at).toBeLessThan(Math.max(dueAt, ready) + 1500)
    const all = await events()
    expect(all.filter((e) => e.type === "step-retry").map((e) => e.attempt)).toEqual([1, 2])
    expect(all.at(-1).type).toBe("workflow-complete")
  },
  120_000
)

it(
  "SIGTERM during a back-off: the process exits without waiting for it, and the next one makes attempt 3 at the due time",
  async () => {
    const dir = tempDir("service-retry-")
    const databaseUrl = `file:${join(dir, "retry.db")}`
    const log = join(dir, "attempts.jsonl")
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const events = async (): Promise<Array<any>> => {
      const listing = await fetch(`${base}/workflows/executions?workflowId=flaky-call`).then((r) => r.json())
      return listing.data.find((e: any) => e.id === "t-1")?.events ?? []
    }

    const first = await start(port, databaseUrl)
    await fetch(`${base}/workflows/flaky-call/run`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: { log }, options: { executionId: "t-1" } })
    })
    const retried = await pollUntil(
      "the second retry is committed",
      events,
      (list) => list.some((e) => e.type === "step-retry" && e.attempt === 2),
      60_000
    )
    const dueAt = Date.parse(retried.find((e) => e.type === "step-retry" && e.attempt === 2).retryAt)
    const stopping = Date.now()
    first.child.kill("SIGTERM")
    expect((await first.exit).code).toBe(0)
    // The 6 s back-off was not waited (nor the 10 s grace).
    expect(Date.now() - stopping).toBeLessThan(4000)
    expect(Date.now()).toBeLessThan(dueAt)

    await start(port, databaseUrl)
    const state = () =>
      fetch(`${base}/workflows/flaky-call/executions/t-1/state`).then((r) => r.json()).then((b) => b.data)
    expect(await pollUntil("the handed-over execution settles", state, (s) => s.status !== "running", 60_000))
      .toMatchObject({
        status: "completed",
        result: { attempt: 3 }
      })
    const made: Array<Attempt> = readFileSync(log, "utf8").split("\n").filter((line) => line !== "").map((line) =>
      JSON.parse(line)
    )
    expect(made.map((a) => a.attempt)).toEqual([1, 2, 3])
    expect(made[2].at).toBeGreaterThanOrEqual(dueAt)
    expect((await events()).filter((e) => e.type === "step-retry").map((e) => e.attempt)).toEqual([1, 2])
  },
  120_000
)
