/**
 * Rows 10 and 11 (issue #31): durable timers and loops of the example app.
 * - 10: `--sleepers` executions of `reminder` parked at once (their wake times spread uniformly over
 *   60 s, after all are created): the RSS idle, once they are parked, and the wake lateness (p50/p99)
 *   from max(wakeAt, instance ready) to the step after the sleep, on one service, then again with the
 *   service stopped and started between parking and waking.
 * - 11: `batch` with a 1,000-item `andForEach` at concurrency 16, on SQLite (items/s) and on a fresh
 *   Postgres database (items/s, and the transactions, row writes and database bytes per item from
 *   pg_stat_database and pg_database_size).
 */
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { createPostgresDatabase } from "../support/database.js"
import { residentBytes, sleep } from "../support/service.js"
import { json, pool } from "./client.js"
import type { Lab } from "./lab.js"
import type { Server } from "./processes.js"
import { median, percentile, type RowResult } from "./table.js"

const WAKE_SPREAD_MS = 60_000
const CREATE_CONNECTIONS = 32
const LIST_PAGE = 500
const BATCH_ITEMS = 1_000
const BATCH_RUNS = 3

const idleOf = async (pid: number) => {
  await sleep(2_000)
  const readings: Array<number> = []
  for (let i = 0; i < 5; i++) {
    readings.push(await residentBytes(pid))
    await sleep(200)
  }
  return median(readings)
}

/** Every completed `reminder` execution's output, paging through the listing. */
const completedReminders = async (server: Server) => {
  const outputs: Array<{ readonly remindAt: string; readonly deliveredAt: string }> = []
  for (let offset = 0;; offset += LIST_PAGE) {
    const page = await json({
      url: server.url,
      method: "GET",
      path: `/workflows/executions?workflowId=reminder&status=completed&limit=${LIST_PAGE}&offset=${offset}`
    }, 60_000)
    const records: Array<{ readonly output?: { readonly remindAt: string; readonly deliveredAt: string } }> =
      page.body.data
    for (const record of records) if (record.output !== undefined) outputs.push(record.output)
    if (records.length < LIST_PAGE) return outputs
  }
}

const runningCount = async (server: Server) => {
  const page = await json({
    url: server.url,
    method: "GET",
    path: `/workflows/executions?workflowId=reminder&status=running&limit=1`
  })
  return page.body.data.length as number
}

/**
 * Parks `count` reminders (wake times from `firstWake` over WAKE_SPREAD_MS), optionally restarts the
 * service, waits until none is running, and gives the lateness of each and the RSS readings.
 */
const sleepers = async (lab: Lab, count: number, restart: boolean) => {
  const env = await lab.modelEnv()
  let service = await lab.startService({ env })
  try {
    const idle = await idleOf(service.pid)
    // Created at 100/s at worst (the pipeline row does ~350/s here): the first wake is after the last start.
    const firstWake = Date.now() + Math.max(30_000, (count / 100) * 1000)
    const created = await pool(count, CREATE_CONNECTIONS, async (index) => {
      const at = new Date(firstWake + (WAKE_SPREAD_MS * index) / count).toISOString()
      const reply = await json({
        url: service.url,
        method: "POST",
        path: "/workflows/reminder/run",
        body: { input: { at, message: `r${index}` } }
      })
      if (reply.status !== 201) throw new Error(`${reply.status} ${JSON.stringify(reply.body).slice(0, 200)}`)
    }, firstWake - Date.now() - 1_000)
    // Parked executions hold nothing: the RSS goes back towards idle (polled until within 10%, before the first wake).
    const settleBy = Math.min(Date.now() + 30_000, firstWake - 2_000)
    let parked = await residentBytes(service.pid)
    while (parked > idle * 1.1 && Date.now() < settleBy) {
      await sleep(500)
      parked = await residentBytes(service.pid)
    }
    let ready = 0
    if (restart) {
      await service.stop()
      service = await lab.startService({ env, databaseFile: service.databaseFile })
      ready = Date.now()
    }
    const lastWake = firstWake + WAKE_SPREAD_MS
    if (Date.now() < lastWake) await sleep(lastWake - Date.now())
    for (const deadline = lastWake + 120_000; Date.now() < deadline && (await runningCount(service)) > 0;) {
      await sleep(1_000)
    }
    const lateness = (await completedReminders(service)).map(({ deliveredAt, remindAt }) =>
      Date.parse(deliveredAt) - Math.max(Date.parse(remindAt), ready)
    )
    return {
      idle,
      parked,
      lateness,
      created: created.results.length,
      failed: created.failed,
      firstError: created.firstError
    }
  } finally {
    await service.stop()
  }
}

export const sleepersRow = async (lab: Lab): Promise<RowResult> => {
  const count = lab.options.sleepers
  const plain = await sleepers(lab, count, false)
  const restarted = await sleepers(lab, count, true)
  const notes = [
    ...[plain, restarted].flatMap((run, i) =>
      run.failed > 0
        ? [`${i === 0 ? "one service" : "restarted"}: ${run.failed} starts failed (${run.firstError})`]
        : []
    ),
    ...[plain, restarted].flatMap((run, i) =>
      run.lateness.length < run.created
        ? [
          `${i === 0 ? "one service" : "restarted"}: ${run.created - run.lateness.length} not completed by the deadline`
        ]
        : []
    )
  ]
  return {
    id: "10",
    cells: {
      count: plain.created,
      idle: plain.idle,
      parked: plain.parked,
      parkedOverIdle: plain.parked / plain.idle,
      p50: percentile(plain.lateness, 0.5),
      p99: percentile(plain.lateness, 0.99),
      restartP50: percentile(restarted.lateness, 0.5),
      restartP99: percentile(restarted.lateness, 0.99)
    },
    notes
  }
}

const batchOnce = async (server: Server) => {
  const started = performance.now()
  const reply = await json({
    url: server.url,
    method: "POST",
    path: "/workflows/batch/execute",
    body: { input: { count: BATCH_ITEMS } }
  }, 300_000)
  const seconds = (performance.now() - started) / 1000
  if (reply.status !== 200 || reply.body.data?.status !== "completed") {
    throw new Error(`batch: ${reply.status} ${JSON.stringify(reply.body).slice(0, 300)}`)
  }
  return BATCH_ITEMS / seconds
}

interface PgCounters {
  readonly commits: number
  readonly writes: number
  readonly bytes: number
}

const pgCounters = (url: string): Promise<PgCounters> =>
  Effect.runPromise(Effect.scoped(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // The statistics of other backends reach pg_stat_database once flushed (at most a second later).
      yield* Effect.sleep("1500 millis")
      const [row] = yield* sql<{ commits: string; writes: string; bytes: string }>`SELECT xact_commit AS commits,
      tup_inserted + tup_updated + tup_deleted AS writes, pg_database_size(current_database()) AS bytes
      FROM pg_stat_database WHERE datname = current_database()`
      return { commits: Number(row.commits), writes: Number(row.writes), bytes: Number(row.bytes) }
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
  ))

export const forEachRow = async (lab: Lab): Promise<RowResult> => {
  const env = await lab.modelEnv()
  const sqlite = await lab.startService({ env })
  const sqliteRates: Array<number> = []
  try {
    for (let run = 0; run < BATCH_RUNS; run++) sqliteRates.push(await batchOnce(sqlite))
  } finally {
    await sqlite.stop()
  }
  const database = await createPostgresDatabase(lab.options.postgresUrl)
  try {
    const postgres = await lab.startServiceOn(database.url, env)
    try {
      await batchOnce(postgres)
      const before = await pgCounters(database.url)
      const pgRates: Array<number> = []
      for (let run = 0; run < BATCH_RUNS; run++) pgRates.push(await batchOnce(postgres))
      const after = await pgCounters(database.url)
      const items = BATCH_RUNS * BATCH_ITEMS
      return {
        id: "11",
        cells: {
          sqlite: median(sqliteRates),
          postgres: median(pgRates),
          commitsPerItem: (after.commits - before.commits) / items,
          writesPerItem: (after.writes - before.writes) / items,
          bytesPerItem: (after.bytes - before.bytes) / items
        },
        notes: []
      }
    } finally {
      await postgres.stop()
    }
  } finally {
    await database.drop()
  }
}
