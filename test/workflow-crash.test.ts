import { afterEach, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, killed, type Spawned, spawnMain, waitForHttp } from "./support/process.js"

const running: Array<Spawned> = []
const dirs: Array<string> = []
afterEach(() => {
  running.splice(0).forEach(killed)
  dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true }))
})

const post = (url: string, body: unknown) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(
    async (r) => ({
      status: r.status,
      body: await r.json()
    })
  )

const state = (base: string, workflow: string, id: string) =>
  fetch(`${base}/workflows/${workflow}/executions/${id}/state`).then((r) => r.json()).then((b) => b.data)

const start = async (port: number, databaseUrl: string) => {
  const server = spawnMain(["--port", String(port)], { env: { DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" } })
  running.push(server)
  await waitForHttp(port)
  return server
}

it(
  "SIGKILL during `slow` and while `approval` is suspended: after a restart on the same database the running one finishes and the suspended one resumes",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "service-crash-"))
    dirs.push(dir)
    const databaseUrl = `file:${join(dir, "crash.db")}`
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`

    const first = await start(port, databaseUrl)
    const suspended = await post(`${base}/workflows/approval/execute`, {
      input: { amount: 250 },
      options: { executionId: "crash-approval" }
    })
    expect(suspended.body.data.status).toBe("suspended")
    const slow = await post(`${base}/workflows/slow/run`, {
      input: { ms: 1500 },
      options: { executionId: "crash-slow" }
    })
    expect(slow.status).toBe(201)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await state(base, "slow", "crash-slow")).status).toBe("running")
    first.child.kill("SIGKILL")
    await first.exit

    await start(port, databaseUrl)
    let slowState = await state(base, "slow", "crash-slow")
    for (let i = 0; i < 300 && slowState.status === "running"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      slowState = await state(base, "slow", "crash-slow")
    }
    expect(slowState).toMatchObject({ status: "completed", result: { waitedMs: 1500 } })

    expect((await state(base, "approval", "crash-approval")).status).toBe("suspended")
    const resumed = await post(`${base}/workflows/approval/executions/crash-approval/resume`, {
      resumeData: { approved: true }
    })
    expect(resumed.body.data).toMatchObject({ status: "completed", result: { approved: true, amount: 250 } })

    const events = await fetch(`${base}/workflows/executions?workflowId=slow`).then((r) => r.json())
    const types = events.data.find((e: any) => e.id === "crash-slow").events.map((e: any) => e.type)
    expect(types.filter((t: string) => t === "step-start")).toHaveLength(2)
    expect(types.at(-1)).toBe("workflow-complete")

    // The restarted process took the running execution over, and counted it (GET /metrics, issue #14.5).
    const metrics = await fetch(`${base}/metrics`).then((r) => r.text())
    expect(metrics).toMatch(/^workflow_takeovers_total\{[^}]*\} 1$/m)
    expect(metrics).toMatch(/^workflow_executions_total\{status="completed"[^}]*\} 2$/m)
  },
  60_000
)
