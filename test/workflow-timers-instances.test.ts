import { afterEach, describe, expect, it } from "@effect/vitest"
import { type Cluster, createCluster, type Instance, until } from "./support/cluster.js"
import { postgresAvailable } from "./support/postgres.js"

/**
 * Durable timers (issue #31) on real instances (`npm run build` first) sharing one Postgres: any live
 * instance wakes a sleeper, exactly once, including after the instance that parked it died.
 */

describe.skipIf(!postgresAvailable)("durable timers on Postgres instances", () => {
  let cluster: Cluster | undefined
  afterEach(async () => {
    await cluster?.close()
    cluster = undefined
  })

  const state = async (c: Cluster, on: Instance, id: string) =>
    (await c.get(on, `/workflows/reminder/executions/${id}/state`)).body.data
  const eventsOf = async (c: Cluster, id: string) =>
    (await c.query<{ event: string }>(`SELECT event FROM workflow_events WHERE execution_id = '${id}' ORDER BY seq`))
      .map((row) => JSON.parse(row.event) as { type: string; from: string; timestamp: string; wakeAt?: string })

  it(
    "the parking instance is killed: the other wakes its sleepers at wakeAt (told by NOTIFY: its poll is 8 s), each exactly once",
    async () => {
      const c = (cluster = await createCluster({ ids: ["a", "b"], env: { WORKFLOW_POLL_MS: "8000" } }))
      const [a, b] = await c.startAll()
      const ids = Array.from({ length: 10 }, (_, i) => `pg-sleeper-${i}`)
      for (const [i, id] of ids.entries()) {
        const run = await c.post(a, "/workflows/reminder/run", {
          input: { message: id, delaySeconds: 3 + (i % 3) },
          options: { executionId: id }
        })
        expect(run.status).toBe(201)
      }
      for (const id of ids) {
        await until(async () => (await state(c, a, id)).waitingUntil !== undefined, 20_000, `${id} parked`)
      }
      const rows = await c.query<{ status: string; owner: string | null }>(
        `SELECT status, owner FROM workflow_executions WHERE id LIKE 'pg-sleeper-%'`
      )
      expect(rows.every((row) => row.status === "sleeping" && row.owner === null)).toBe(true)
      await c.kill(a)
      for (const id of ids) {
        const done = await until(
          async () => {
            const s = await state(c, b, id)
            return s.status === "completed" ? s : undefined
          },
          30_000,
          `${id} completed by b`
        )
        const events = await eventsOf(c, id)
        const wakeAt = Date.parse(events.find((e) => e.type === "step-sleep")!.wakeAt!)
        expect(Date.parse(done.result.deliveredAt)).toBeGreaterThanOrEqual(wakeAt)
        // b's one timer was armed by a's NOTIFY when it parked them: no 8 s poll was needed.
        expect(Date.parse(done.result.deliveredAt) - wakeAt).toBeLessThan(1500)
        expect(events.filter((e) => e.type === "step-complete" && e.from === "wait")).toHaveLength(1)
        expect(events.filter((e) => e.type === "step-start" && e.from === "deliver")).toHaveLength(1)
        expect(events.at(-1)!.type).toBe("workflow-complete")
      }
    },
    120_000
  )

  it("two live instances: 40 sleepers parked on both are each woken exactly once, near wakeAt", async () => {
    const c = (cluster = await createCluster({ ids: ["a", "b"] }))
    const [a, b] = await c.startAll()
    const ids = Array.from({ length: 40 }, (_, i) => `pg-both-${i}`)
    await Promise.all(
      ids.map((id, i) =>
        c.post(i % 2 === 0 ? a : b, "/workflows/reminder/run", {
          input: { message: id, delaySeconds: 4 },
          options: { executionId: id }
        })
      )
    )
    await until(
      async () => {
        const [row] = await c.query<{ n: string }>(
          `SELECT COUNT(*) AS n FROM workflow_executions WHERE status = 'completed'`
        )
        return Number(row.n) === ids.length
      },
      60_000,
      "every sleeper completed"
    )
    for (const id of ids) {
      const events = await eventsOf(c, id)
      expect(events.filter((e) => e.type === "step-complete" && e.from === "wait")).toHaveLength(1)
      expect(events.filter((e) => e.type === "workflow-complete")).toHaveLength(1)
      const wakeAt = Date.parse(events.find((e) => e.type === "step-sleep")!.wakeAt!)
      const woke = Date.parse(events.find((e) => e.type === "step-complete" && e.from === "wait")!.timestamp)
      expect(woke).toBeGreaterThanOrEqual(wakeAt)
      expect(woke - wakeAt).toBeLessThan(1500)
    }
  }, 120_000)
})
