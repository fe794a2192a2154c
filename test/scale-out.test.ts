import * as Sse from "@effect/experimental/Sse"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { type Cluster, createCluster, type Instance, isReady, sleep, until } from "./support/cluster.js"
import { postgresAvailable } from "./support/postgres.js"

/**
 * Several `node dist/main.js` processes on one Postgres database: each running execution is owned by
 * one instance, a dead or stuck owner's executions move on, and any instance serves any request.
 */

let cluster: Cluster | undefined
afterEach(async () => {
  await cluster?.close()
  cluster = undefined
})

interface Row {
  readonly status: string
  readonly owner: string | null
  readonly version: number
}

const rowOf = async (c: Cluster, id: string): Promise<Row> => {
  const [row] = await c.query<Row>(`SELECT status, owner, version FROM workflow_executions WHERE id = '${id}'`)
  return { ...row, version: Number(row.version) }
}

const eventTypes = async (c: Cluster, id: string) =>
  (await c.query<{ event: string }>(`SELECT event FROM workflow_events WHERE execution_id = '${id}' ORDER BY seq`))
    .map((row) => JSON.parse(row.event).type as string)

const state = async (c: Cluster, on: Instance, workflow: string, id: string) =>
  (await c.get(on, `/workflows/${workflow}/executions/${id}/state`)).body.data

const runSlow = async (c: Cluster, on: Instance, id: string, ms: number) => {
  const started = await c.post(on, "/workflows/slow/run", { input: { ms }, options: { executionId: id } })
  expect(started.status).toBe(201)
  await until(async () => (await rowOf(c, id)).owner === on.id, 10_000, `${id} owned by ${on.id}`)
}

/** Reads an SSE response, noting when each frame arrived. */
const readFrames = async (
  response: Response,
  onFrame: (frame: { id: string | undefined; data: any; at: number }) => void
) => {
  const parser = Sse.makeParser((event) => {
    if (event._tag === "Event") onFrame({ id: event.id, data: JSON.parse(event.data), at: Date.now() })
  })
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
  for (let next = await reader.read(); !next.done; next = await reader.read()) parser.feed(next.value)
}

describe.skipIf(!postgresAvailable)("several instances on one Postgres", () => {
  it("SIGKILL of the owner during `slow`: another instance claims it within 5 s and completes it", async () => {
    const c = (cluster = await createCluster({ ids: ["a", "b"] }))
    const [a, b] = await c.startAll()
    await runSlow(c, a, "killed-owner", 1500)
    await sleep(200)
    const before = await rowOf(c, "killed-owner")
    await c.kill(a)
    const killedAt = Date.now()
    await until(
      async () => (await rowOf(c, "killed-owner")).owner === "b",
      5_000,
      "claimed by b within 5 s of the kill"
    )
    const claimedMs = Date.now() - killedAt
    const done = await until(
      async () => {
        const s = await state(c, b, "slow", "killed-owner")
        return s.status === "completed" && s
      },
      10_000,
      "completed on b"
    )
    expect(done.result).toEqual({ waitedMs: 1500 })
    expect((await rowOf(c, "killed-owner")).version).toBe(before.version + 1)
    // The step that was running when its owner died ran again on the new owner.
    expect(await eventTypes(c, "killed-owner")).toEqual([
      "workflow-start",
      "step-start",
      "step-start",
      "step-complete",
      "workflow-complete"
    ])
    console.log(
      `failover after SIGKILL: claimed ${claimedMs} ms after the kill, completed ${Date.now() - killedAt} ms after it`
    )
  })

  it("SIGSTOP of the owner past its lease, then SIGCONT: another instance takes over and the old owner writes nothing more", async () => {
    const c =
      (cluster = await createCluster({ ids: ["a", "b"], env: { WORKFLOW_LEASE_SECONDS: "2", LOG_LEVEL: "info" } }))
    const [a, b] = await c.startAll()
    await runSlow(c, a, "paused-owner", 4000)
    await c.stop(a)
    await until(
      async () => (await rowOf(c, "paused-owner")).owner === "b",
      15_000,
      "claimed by b once a's lease ran out"
    )
    // a's step timer is overdue when it wakes: its write would land at once if it were not refused.
    await c.resume(a)
    const wokeAt = Date.now()
    while (Date.now() - wokeAt < 1500) {
      expect(await rowOf(c, "paused-owner")).toMatchObject({ status: "running", owner: "b" })
      await sleep(50)
    }
    await until(
      async () => (await state(c, b, "slow", "paused-owner")).status === "completed",
      15_000,
      "completed by b"
    )
    expect(await eventTypes(c, "paused-owner")).toEqual([
      "workflow-start",
      "step-start",
      "step-start",
      "step-complete",
      "workflow-complete"
    ])
    await until(() => a.process.stdout().includes("taken elsewhere"), 5_000, "a stopped its fiber")
    await until(() => isReady(a.url), 10_000, "a serves again")
  })

  it("takeover race: three instances, one orphaned execution, exactly one claims it (50 trials)", async () => {
    const c = (cluster = await createCluster({ ids: ["a", "b", "c"] }))
    const [a] = await c.startAll()
    const winners: Record<string, number> = {}
    for (let trial = 0; trial < 50; trial++) {
      const id = `orphan-${trial}`
      await runSlow(c, a, id, 60_000)
      // Orphaned: no owner, a new epoch (a's fiber is fenced off), and every instance told at the same moment.
      await c.query(`UPDATE workflow_executions SET owner = NULL, version = version + 1 WHERE id = '${id}'`)
      await c.query(`SELECT pg_notify('workflow_executions', 'ghost released ${id}')`)
      const claimed = await until(
        async () => {
          const row = await rowOf(c, id)
          return row.owner !== null && row
        },
        10_000,
        `${id} claimed`
      )
      winners[claimed.owner!] = (winners[claimed.owner!] ?? 0) + 1
      await sleep(100)
      // One claim moves the epoch once and runs the step once more; a second would move it again.
      expect(await rowOf(c, id)).toEqual({ status: "running", owner: claimed.owner, version: 2 })
      expect((await eventTypes(c, id)).filter((type) => type === "step-start")).toHaveLength(2)
      expect((await c.post(a, `/workflows/slow/executions/${id}/cancel`, {})).status).toBe(200)
    }
    console.log(`takeover race winners over 50 trials: ${JSON.stringify(winners)}`)
  })

  it("a second live instance with the same SERVICE_INSTANCE_ID is refused at start-up", async () => {
    const c = (cluster = await createCluster({ ids: ["a"] }))
    await c.startAll()
    const twin = await c.spawn("a")
    const exit = await twin.process.exit
    expect(exit.code).toBe(1)
    expect(twin.process.stderr()).toContain("Instance id a is held by a live instance")
  })

  it("a second instance starting while the first runs executions takes none of them", async () => {
    const c = (cluster = await createCluster({ ids: ["a"] }))
    const [a] = await c.startAll()
    await Promise.all(Array.from({ length: 5 }, (_, i) => runSlow(c, a, `live-${i}`, 8000)))
    const b = await c.spawn("b")
    await c.ready(b)
    // On a loaded machine b may take longer to start than the steps take to finish: what is still
    // running is a's, untouched; a step run once (below) shows b took over none of them.
    for (let i = 0; i < 5; i++) {
      const row = await rowOf(c, `live-${i}`)
      if (row.status === "running") expect(row).toMatchObject({ owner: "a", version: 0 })
    }
    for (let i = 0; i < 5; i++) {
      await until(async () => (await rowOf(c, `live-${i}`)).status === "completed", 30_000, `live-${i} completed`)
      expect((await eventTypes(c, `live-${i}`)).filter((type) => type === "step-start")).toHaveLength(1)
    }
  })

  it("cancel and suspend on B of executions running on A take effect on A within 1 s; resume on B runs it", async () => {
    const c = (cluster = await createCluster({
      ids: ["a", "b"],
      envOf: (id): Record<string, string> => (id === "a" ? { LOG_LEVEL: "info" } : {})
    }))
    const [a, b] = await c.startAll()
    await runSlow(c, a, "cancel-me", 20_000)
    const cancelled = await c.post(b, "/workflows/slow/executions/cancel-me/cancel", { reason: "from b" })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body.data.status).toBe("cancelled")
    expect((await rowOf(c, "cancel-me")).status).toBe("cancelled")
    // The log line (logfmt: the output is a pipe), its annotations on it.
    const stoppedOnA = (id: string) => () =>
      new RegExp(`taken elsewhere.* executionId=${id}\\b`).test(a.process.stdout())
    await until(stoppedOnA("cancel-me"), 1_000, "a stopped the cancelled execution within 1 s")

    await runSlow(c, a, "suspend-me", 20_000)
    const suspended = await c.post(b, "/workflows/slow/executions/suspend-me/suspend", { reason: "from b" })
    expect(suspended.status).toBe(200)
    expect((await rowOf(c, "suspend-me")).status).toBe("suspended")
    await until(stoppedOnA("suspend-me"), 1_000, "a stopped the suspended execution within 1 s")
    // Resumed on b, it runs on b (it waits 20 s again: cancelled to end the test).
    const resumed = c.post(b, "/workflows/slow/executions/suspend-me/resume", { resumeData: {} })
    await until(async () => (await rowOf(c, "suspend-me")).owner === "b", 5_000, "resumed on b")
    await c.post(a, "/workflows/slow/executions/suspend-me/cancel", {})
    expect((await resumed).status).toBeLessThan(500)
  })

  it("re-attach on B to an execution running on A gets its live events within 100 ms of A storing them", async () => {
    const c = (cluster = await createCluster({ ids: ["a", "b"] }))
    const [a, b] = await c.startAll()
    const delays: Array<number> = []
    for (let i = 0; i < 5; i++) {
      const id = `followed-${i}`
      await runSlow(c, a, id, 500)
      const response = await fetch(`${b.url}/workflows/slow/executions/${id}/stream`, {
        headers: { "last-event-id": "1" }
      })
      expect(response.status).toBe(200)
      const frames: Array<{ id: string | undefined; data: any; at: number }> = []
      await readFrames(response, (frame) => frames.push(frame))
      expect(frames.map((frame) => frame.data.type)).toEqual([
        "step-start",
        "step-complete",
        "workflow-complete",
        "workflow-result"
      ])
      expect(frames.slice(0, 3).map((frame) => Number(frame.id))).toEqual([2, 3, 4])
      // Live ones: stored by a after b's stream began (same machine, so one clock).
      for (const frame of frames.slice(1, 3)) delays.push(frame.at - Date.parse(frame.data.timestamp))
    }
    delays.sort((x, y) => x - y)
    console.log(`re-attach on another instance: live event delays (ms) ${delays.join(", ")}`)
    expect(delays[Math.floor(delays.length / 2)]).toBeLessThanOrEqual(100)
    expect(delays.at(-1)!).toBeLessThan(1_000)
  })

  it("an Idempotency-Key retried on another instance returns the first execution's result, never a second execution", async () => {
    const c = (cluster = await createCluster({ ids: ["a", "b"] }))
    const [a, b] = await c.startAll()
    const headers = { "idempotency-key": "retry-through-the-balancer" }
    const first = c.post(a, "/workflows/slow/execute", { input: { ms: 1500 } }, headers)
    await until(async () => (await c.query(`SELECT id FROM workflow_executions`)).length === 1, 10_000, "first stored")
    const retry = await c.post(b, "/workflows/slow/execute", { input: { ms: 1500 } }, headers)
    expect(retry.status).toBe(200)
    expect(retry.body.data).toMatchObject({ status: "completed", result: { waitedMs: 1500 } })
    expect(retry.body.data.executionId).toBe((await first).body.data.executionId)
    expect(await c.query(`SELECT id FROM workflow_executions`)).toHaveLength(1)
  })

  it("SIGTERM hands over: a step that finishes within the grace completes there; one that does not is released and another instance continues at once", async () => {
    const c = (cluster = await createCluster({
      ids: ["a", "b"],
      envOf: (id): Record<string, string> => (id === "a" ? { SHUTDOWN_GRACE_SECONDS: "1" } : {})
    }))
    const [a, b] = await c.startAll()
    await runSlow(c, a, "short-step", 300)
    await runSlow(c, a, "long-step", 4000)
    const exit = await c.terminate(a)
    const exitedAt = Date.now()
    expect(exit).toMatchObject({ code: 0 })
    expect(await rowOf(c, "short-step")).toMatchObject({ status: "completed" })
    await until(async () => (await rowOf(c, "long-step")).owner === "b", 1_500, "b took the released execution at once")
    console.log(`SIGTERM hand-over: b claimed ${Date.now() - exitedAt} ms after a exited`)
    await until(async () => (await state(c, b, "slow", "long-step")).status === "completed", 15_000, "completed by b")
    expect(await rowOf(c, "long-step")).toMatchObject({ status: "completed", version: 2 })
  })
})
