/**
 * Row 6 (listing deep into many stored executions) and row 8 (start-up to the first 200).
 */
import { join } from "node:path"
import { freePort, isAlive, sleep, stopService } from "../support/service.js"
import { interleaved, json, type Target, timed } from "./client.js"
import type { Lab } from "./lab.js"
import { removeDirectory, temporaryDirectory } from "./processes.js"
import { seedExecutions } from "./store.js"
import { median, percentile, type RowResult } from "./table.js"

const PAGE = 50
const SEED_DEADLINE_MS = 20 * 60_000

let seeded: Promise<{ readonly file: string; readonly stored: number }> | undefined

/** The database with the stored executions, made once per bench invocation (the row only reads it). */
const seededDatabase = (count: number) => (seeded ??= (async () => {
  const file = join(temporaryDirectory("bench-seeded-"), "seeded.db")
  const started = Date.now()
  const stored = await seedExecutions(file, count, SEED_DEADLINE_MS)
  console.error(
    `row 6: stored ${stored.toLocaleString("en-US")} executions through the ExecutionStore in ${
      ((Date.now() - started) / 1000).toFixed(1)
    } s`
  )
  return { file, stored }
})())

/** The seeded database, if row 6 made one: the durability read-out can use it. */
export const seededFile = async () => (seeded === undefined ? undefined : (await seeded).file)

/** Row 6: a filtered page of 50 at offset 0 and at the last page, one request at a time, interleaved. */
export const listingRow = async (lab: Lab): Promise<RowResult> => {
  const { file, stored } = await seededDatabase(lab.options.storedExecutions)
  const service = await lab.startService({ env: await lab.modelEnv(), databaseFile: file })
  try {
    const deepOffset = Math.max(0, stored - PAGE)
    const page = (offset: number): Target => ({
      url: service.url,
      method: "GET",
      path: `/workflows/executions?workflowId=pipeline&status=completed&limit=${PAGE}&offset=${offset}`
    })
    const notes: Array<string> = []
    for (const offset of [0, deepOffset]) {
      const reply = await json(page(offset))
      const length = Array.isArray(reply.body?.data) ? reply.body.data.length : -1
      if (reply.status !== 200 || length !== Math.min(PAGE, stored)) {
        notes.push(`offset ${offset} answered ${reply.status} with ${length} executions`)
      }
    }
    const { errors, times } = await interleaved([{ target: page(0) }, { target: page(deepOffset) }], {
      count: 200,
      warmup: 20,
      deadlineMs: 5 * 60_000
    })
    const [start, deep] = times
    if (errors > 0) notes.push(`${errors} failed requests`)
    if (stored < lab.options.storedExecutions) {
      notes.push(`only ${stored} executions stored before the seeding deadline`)
    }
    return {
      id: "6",
      cells: {
        stored,
        deepOffset,
        p50Start: percentile(start, 0.5),
        p99Start: percentile(start, 0.99),
        p50Deep: percentile(deep, 0.5),
        p99Deep: percentile(deep, 0.99),
        errors
      },
      notes
    }
  } finally {
    await service.stop()
  }
}

const FIRST_ANSWER_DEADLINE_MS = 60_000
const POLL_EVERY_MS = 5

/** Spawns the service on an empty database and gives the milliseconds from the spawn to the first 200 on GET /agents. */
const startupMs = async (lab: Lab, env: Record<string, string>): Promise<number> => {
  const directory = temporaryDirectory("bench-startup-")
  const port = await freePort()
  const target: Target = { url: `http://127.0.0.1:${port}`, method: "GET", path: "/agents" }
  const started = performance.now()
  const service = lab.spawnService(port, join(directory, "service.db"), env)
  try {
    while (performance.now() - started < FIRST_ANSWER_DEADLINE_MS) {
      if (!isAlive(service)) throw new Error(`the service exited during start-up:\n${service.output()}`)
      const reply = await timed(false, target, undefined, 1_000).catch(() => undefined)
      if (reply?.status === 200) return performance.now() - started
      await sleep(POLL_EVERY_MS)
    }
    throw new Error(`no 200 within ${FIRST_ANSWER_DEADLINE_MS} ms`)
  } finally {
    await stopService(service)
    removeDirectory(directory)
  }
}

/** Row 8: start-up to the first 200 on an empty database, median of `startups` starts. */
export const startupRow = async (lab: Lab): Promise<RowResult> => {
  const env = await lab.modelEnv()
  const times: Array<number> = []
  for (let start = 0; start < lab.options.startups; start++) times.push(await startupMs(lab, env))
  return {
    id: "8",
    cells: { median: median(times), min: Math.min(...times), max: Math.max(...times), count: times.length },
    notes: []
  }
}
