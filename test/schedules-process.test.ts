import { afterEach, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Cluster, createCluster, sleep, until } from "./support/cluster.js"
import { postgresAvailable } from "./support/postgres.js"

/**
 * A schedule on real instances (`npm run build` first) sharing one Postgres (issue #33): two
 * instances, one killed (SIGKILL) and started again in between; every fire time from the first to the
 * last starts exactly one execution, and each completes. "A minute" is a second here: the config
 * file's test setting `schedules.minIntervalSeconds` lets the cron have a seconds field.
 */

describe.skipIf(!postgresAvailable)("schedules on Postgres instances", () => {
  let cluster: Cluster | undefined
  const dir = mkdtempSync(join(tmpdir(), "schedules-process-"))
  const config = join(dir, "config.json")
  writeFileSync(config, JSON.stringify({ schedules: { minIntervalSeconds: 1 } }))
  afterEach(async () => {
    await cluster?.close()
    cluster = undefined
  })

  it("fires once per second across two instances for 20 s with one killed and restarted in between", async () => {
    try {
      const c = (cluster = await createCluster({ ids: ["a", "b"], args: ["--config", config] }))
      const [a, b] = await c.startAll()
      const created = await c.post(a, "/workflows/pipeline/schedules", {
        name: "each-second",
        cron: "* * * * * *",
        input: { text: "tick", n: 1 },
        catchUp: "all"
      })
      expect(created.status).toBe(201)
      const id = created.body.data.id as string
      await sleep(6_000)
      await c.kill(b)
      await sleep(6_000)
      const b2 = await c.spawn("b")
      await c.ready(b2)
      await sleep(6_000)
      const paused = await c.post(b2, `/workflows/pipeline/schedules/${id}/pause`, {})
      expect(paused.status).toBe(200)
      const rows = await until(
        async () => {
          const found = await c.query<{ id: string; status: string }>(
            `SELECT id, status FROM workflow_executions WHERE id LIKE 'sched:${id}:%' ORDER BY id`
          )
          return found.length > 0 && found.every((row) => row.status === "completed") ? found : undefined
        },
        60_000,
        "every fired execution completed"
      )
      const times = rows.map((row) => Date.parse(row.id.slice(`sched:${id}:`.length)))
      expect(times.every(Number.isFinite)).toBe(true)
      expect(times.length).toBeGreaterThanOrEqual(15)
      // Consecutive seconds: none twice, none missing, across the kill and the restart.
      expect(times).toEqual(times.map((_, i) => times[0] + i * 1000))
      const events = await c.query<{ n: string }>(
        `SELECT COUNT(*) AS n FROM workflow_events WHERE execution_id LIKE 'sched:${id}:%' AND event LIKE '%"type":"workflow-start"%'`
      )
      expect(Number(events[0]!.n)).toBe(times.length)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)
})
