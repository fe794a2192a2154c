import { afterEach, describe, expect, it } from "@effect/vitest"
import { type Cluster, createCluster, until } from "./support/cluster.js"
import { postgresAvailable } from "./support/postgres.js"

/**
 * An instance killed and started again under the same SERVICE_INSTANCE_ID (a pod restarted with its
 * name) goes on with what its previous process left running: that id is live again, so no other
 * instance takes those executions, and the new process, which holds nothing yet, claims its own id's
 * at start-up (`npm run build` first). Before, they stayed running for good (the chaos run with three
 * instances found 37 such `slow` executions).
 */
describe.skipIf(!postgresAvailable)("an instance restarted under its own id", () => {
  let cluster: Cluster | undefined
  afterEach(async () => {
    await cluster?.close()
    cluster = undefined
  })

  it("goes on with the executions its previous process left running", async () => {
    const c = (cluster = await createCluster({ ids: ["a", "b"] }))
    const [a, b] = await c.startAll()
    const ids = Array.from({ length: 5 }, (_, i) => `restart-${i}`)
    for (const id of ids) {
      const started = await c.post(a, "/workflows/slow/run", { input: { ms: 4000 }, options: { executionId: id } })
      expect(started.status).toBe(201)
    }
    await c.kill(a)
    const again = await c.spawn("a")
    await c.ready(again)
    for (const id of ids) {
      const state = await until(
        async () => {
          const answer = (await c.get(b, `/workflows/slow/executions/${id}/state`)).body.data
          return answer.status === "completed" ? answer : undefined
        },
        30_000,
        `${id} completed after its instance came back`
      )
      expect(state).toMatchObject({ status: "completed" })
    }
  }, 90_000)
})
