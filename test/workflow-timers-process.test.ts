import { afterEach, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, killed, type Spawned, spawnMain, waitForHttp } from "./support/process.js"

// Durable timers (issue #31) in real processes on a SQLite file (`npm run build` first): the example
// `reminder` workflow sleeps `delaySeconds` between two steps.

const running: Array<Spawned> = []
const dirs: Array<string> = []
afterEach(() => {
  running.splice(0).forEach(killed)
  dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true }))
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(
    async (r) => ({
      status: r.status,
      body: await r.json()
    })
  )

const state = (base: string, id: string) =>
  fetch(`${base}/workflows/reminder/executions/${id}/state`).then((r) => r.json()).then((b) => b.data)
const events = (base: string, id: string): Promise<Array<any>> =>
  fetch(`${base}/workflows/executions/${id}`).then((r) => r.json()).then((b) => b.data.events)

const until = async <A>(
  read: () => Promise<A>,
  check: (value: A) => boolean,
  what: string,
  deadlineMs = 40_000
): Promise<A> => {
  const deadline = Date.now() + deadlineMs
  for (;;) {
    const value = await read()
    if (check(value)) return value
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`)
    await sleep(25)
  }
}

const setup = async () => {
  const dir = mkdtempSync(join(tmpdir(), "service-timers-"))
  dirs.push(dir)
  const databaseUrl = `file:${join(dir, "timers.db")}`
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const start = async () => {
    const server = spawnMain(["--port", String(port)], { env: { DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" } })
    running.push(server)
    await waitForHttp(port)
    return server
  }
  return { base, start }
}

const parkedAt = async (base: string, id: string) => {
  const parked = await until(
    () => state(base, id),
    (s) => s.status === "running" && s.waitingUntil !== undefined,
    `${id} parked`
  )
  return Date.parse(parked.waitingUntil)
}

it(
  "SIGKILL while asleep: after a restart on the same file it wakes at the committed wakeAt, not a fresh full duration",
  async () => {
    const { base, start } = await setup()
    const first = await start()
    const run = await post(`${base}/workflows/reminder/run`, {
      input: { message: "hi", delaySeconds: 8 },
      options: { executionId: "kill-asleep" }
    })
    expect(run.status).toBe(201)
    const wakeAt = await parkedAt(base, "kill-asleep")
    first.child.kill("SIGKILL")
    await first.exit
    await sleep(1000)
    const restartedAt = Date.now()
    await start()
    const readyAt = Date.now()
    const done = await until(
      () => state(base, "kill-asleep"),
      (s) => s.status === "completed",
      "completed after the restart"
    )
    const delivered = Date.parse(done.result.deliveredAt)
    expect(delivered).toBeGreaterThanOrEqual(wakeAt)
    // At the committed time (or at once when the restart came later), never a fresh full 8 s after the restart.
    expect(delivered - Math.max(wakeAt, readyAt)).toBeLessThan(2000)
    expect(delivered).toBeLessThan(restartedAt + 8000)
    const log = await events(base, "kill-asleep")
    expect(log.filter((e) => e.type === "step-sleep")).toHaveLength(1)
    expect(log.filter((e) => e.type === "step-complete" && e.from === "wait")).toHaveLength(1)
    expect(log.at(-1).type).toBe("workflow-complete")
  },
  90_000
)

it("a wakeAt that passed while the process was down: it continues at start-up", async () => {
  const { base, start } = await setup()
  const first = await start()
  await post(`${base}/workflows/reminder/run`, {
    input: { message: "late", delaySeconds: 1 },
    options: { executionId: "passed" }
  })
  const wakeAt = await parkedAt(base, "passed")
  first.child.kill("SIGKILL")
  await first.exit
  await sleep(Math.max(0, wakeAt - Date.now() + 500))
  await start()
  const done = await until(
    () => state(base, "passed"),
    (s) => s.status === "completed",
    "completed at start-up",
    20_000
  )
  expect(Date.parse(done.result.deliveredAt)).toBeGreaterThanOrEqual(wakeAt)
}, 60_000)

it(
  "SIGTERM with a 20 s sleeper exits promptly (nothing to drain), and after a restart it still completes at wakeAt",
  async () => {
    const { base, start } = await setup()
    const first = await start()
    await post(`${base}/workflows/reminder/run`, {
      input: { message: "later", delaySeconds: 20 },
      options: { executionId: "term-asleep" }
    })
    const wakeAt = await parkedAt(base, "term-asleep")
    const signalled = Date.now()
    first.child.kill("SIGTERM")
    await first.exit
    // The shutdown grace is 10 s: a sleeper that held its fiber would make it wait all of it.
    expect(Date.now() - signalled).toBeLessThan(4000)
    await start()
    expect((await state(base, "term-asleep")).waitingUntil).toBe(new Date(wakeAt).toISOString())
    const done = await until(
      () => state(base, "term-asleep"),
      (s) => s.status === "completed",
      "completed after the restart",
      60_000
    )
    const delivered = Date.parse(done.result.deliveredAt)
    expect(delivered).toBeGreaterThanOrEqual(wakeAt)
    expect(delivered - wakeAt).toBeLessThan(1000)
  },
  120_000
)
