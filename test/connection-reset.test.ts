import { afterEach, describe, expect, it } from "@effect/vitest"
import { type Cluster, createCluster, type Instance, type JsonResponse, sleep, until } from "./support/cluster.js"
import { postgresAvailable } from "./support/postgres.js"

/**
 * Postgres connection resets (`pg_terminate_backend` of every connection to the service's database,
 * as a failover, a pooler restart or an operator does) under running workflows: a store error is never
 * an execution's failure, and an instance whose connection was reset is not dead to the others.
 */

let cluster: Cluster | undefined
afterEach(async () => {
  await cluster?.close()
  cluster = undefined
})

/** Ends every connection to the cluster's database but the one asking. */
const resetConnections = (c: Cluster) =>
  c.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()`)

/** `count` resets `everyMs` apart. */
const resets = async (c: Cluster, count: number, everyMs: number) => {
  for (let i = 0; i < count; i++) {
    await sleep(everyMs)
    await resetConnections(c)
  }
}

interface Settled {
  readonly id: string
  readonly status: string
  readonly version: number
  readonly error: string | null
}

/** Every execution once none is running: its status, its version (each claim moves it on) and error. */
const settledExecutions = async (c: Cluster, withinMs: number): Promise<ReadonlyArray<Settled>> => {
  await until(
    async () => {
      const [row] = await c.query<{ running: string }>(
        `SELECT count(*) AS running FROM workflow_executions WHERE status = 'running'`
      )
      return Number(row.running) === 0
    },
    withinMs,
    "no execution running"
  )
  const rows = await c.query<Settled>(`SELECT id, status, version, error FROM workflow_executions ORDER BY id`)
  return rows.map((row) => ({ ...row, version: Number(row.version) }))
}

const summary = (answers: ReadonlyArray<JsonResponse>, executions: ReadonlyArray<Settled>) => ({
  answers: answers.length,
  serverErrors: answers.filter((answer) => answer.status >= 500).length,
  failed: executions.filter((execution) => execution.status === "error").length,
  moved: executions.filter((execution) => execution.version > 0).length,
  moves: executions.reduce((sum, execution) => sum + execution.version, 0)
})

describe.skipIf(!postgresAvailable)("Postgres connection resets under running workflows", () => {
  it(
    "one instance, five resets during pipeline executions: every /execute answers 200 completed, none fails",
    async () => {
      const c = (cluster = await createCluster({ ids: ["a"] }))
      const [a] = await c.startAll()
      const answers: Array<JsonResponse> = []
      let resetting = true
      let sequence = 0
      // Clients keep checkpoints in flight throughout, so each reset cuts some of them.
      const client = async () => {
        while (resetting) {
          const id = `p-${++sequence}`
          answers.push(
            await c.post(a, "/workflows/pipeline/execute", {
              input: { text: " reset ", n: sequence },
              options: { executionId: id }
            })
          )
        }
      }
      const clients = Array.from({ length: 6 }, client)
      await resets(c, 5, 400)
      // On a loaded machine few executions finish within the resets: go on until enough have answered.
      await until(async () => answers.length > 10, 60_000, "more than 10 answers")
      resetting = false
      await Promise.all(clients)
      const executions = await settledExecutions(c, 60_000)
      const numbers = summary(answers, executions)
      console.log(`one instance, 5 resets: ${JSON.stringify(numbers)}`)
      expect(
        answers.filter((answer) => answer.status !== 200 || answer.body?.data?.status !== "completed").map((answer) =>
          answer.body
        )
      )
        .toEqual([])
      expect(executions.filter((execution) => execution.status !== "completed")).toEqual([])
      expect(numbers.moved).toBe(0)
      expect(numbers.answers).toBeGreaterThan(10)
    },
    180_000
  )

  it("three instances, five resets while 60 executions run: none fails and none changes instance", async () => {
    const c = (cluster = await createCluster({ ids: ["a", "b", "c"] }))
    const instances = await c.startAll()
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => {
      const on: Instance = instances[i % instances.length]
      return c.post(on, "/workflows/slow/run", { input: { ms: 4000 }, options: { executionId: `s-${i}` } })
    }))
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201))
    await resets(c, 5, 300)
    const executions = await settledExecutions(c, 60_000)
    const numbers = summary(answers, executions)
    console.log(`three instances, 5 resets: ${JSON.stringify(numbers)}`)
    expect(executions.filter((execution) => execution.status !== "completed")).toEqual([])
    expect(executions.filter((execution) => execution.version > 0).map(({ id, version }) => ({ id, version }))).toEqual(
      []
    )
    expect(executions).toHaveLength(60)
  }, 120_000)
})
