/**
 * Rows 7a to 7c: the service's resident memory (VmRSS) idle, at its peak under many open streams or
 * many suspended executions, and after the load has gone. Each on a fresh service.
 */
import { residentBytes, sleep } from "../support/service.js"
import { json, loadCount, type OpenStream, openStream, pool, type Target } from "./client.js"
import { AGENT_ID, type Lab, serviceTextDelta } from "./lab.js"
import type { RunningService } from "./processes.js"
import { median, type RowId, type RowResult } from "./table.js"

const SAMPLE_EVERY_MS = 100
const SETTLE_DEADLINE_MS = 30_000
const OPEN_DEADLINE_MS = 10 * 60_000
const CREATE_DEADLINE_MS = 30 * 60_000

/** Samples a process's RSS until stopped; gives the highest reading. */
const peakSampler = (pid: number) => {
  let peak = 0
  let sampling = Promise.resolve()
  const timer = setInterval(() => {
    sampling = residentBytes(pid).then((bytes) => void (peak = Math.max(peak, bytes)), () => undefined)
  }, SAMPLE_EVERY_MS)
  return {
    stop: async () => {
      clearInterval(timer)
      await sampling
      await residentBytes(pid).then((bytes) => void (peak = Math.max(peak, bytes)), () => undefined)
      return peak
    }
  }
}

/** The RSS of a service left alone: the median of 5 readings after a short rest. */
const idleBytes = async (pid: number) => {
  await sleep(2_000)
  const readings: Array<number> = []
  for (let reading = 0; reading < 5; reading++) {
    readings.push(await residentBytes(pid))
    await sleep(200)
  }
  return median(readings)
}

/** Polls the RSS until it is back within 10% of `idle` or the deadline passes; gives the last reading. */
const settledBytes = async (pid: number, idle: number) => {
  const deadline = Date.now() + SETTLE_DEADLINE_MS
  let last = await residentBytes(pid)
  while (last > idle * 1.1 && Date.now() < deadline) {
    await sleep(500)
    last = await residentBytes(pid)
  }
  return last
}

/** Runs `load` (which gives how many things it opened or made) on a fresh service and measures idle, peak and after. */
const measured = async (
  lab: Lab,
  id: RowId,
  load: (
    service: RunningService
  ) => Promise<{ readonly count: number; readonly notes: ReadonlyArray<string>; readonly release: () => Promise<void> }>
): Promise<RowResult> => {
  const service = await lab.startService({ env: await lab.modelEnv() })
  try {
    const idle = await idleBytes(service.pid)
    const sampler = peakSampler(service.pid)
    const loaded = await load(service).catch(async (error: unknown) => {
      await sampler.stop()
      throw error
    })
    await sleep(1_000)
    const peak = await sampler.stop()
    await loaded.release()
    const after = await settledBytes(service.pid, idle)
    return { id, cells: { count: loaded.count, idle, peak, after, afterOverIdle: after / idle }, notes: loaded.notes }
  } finally {
    await service.stop()
  }
}

const approvalExecute = (service: RunningService): Target => ({
  url: service.url,
  method: "POST",
  path: "/workflows/approval/execute",
  body: { input: { amount: 500 } }
})

const closeAll = async (streams: ReadonlyArray<OpenStream>) => {
  for (const stream of streams) stream.close()
  await sleep(500)
}

const failures = (
  outcome: { readonly failed: number; readonly firstError?: string | undefined; readonly unstarted: number },
  what: string
) => [
  ...(outcome.failed > 0 ? [`${outcome.failed} ${what} failed (the first: ${outcome.firstError})`] : []),
  ...(outcome.unstarted > 0
    ? [`${outcome.unstarted} ${what} not tried: the ${OPEN_DEADLINE_MS / 60_000}-minute deadline passed`]
    : [])
]

/** Row 7a: suspended `approval` executions, each followed by several re-attach streams at once. */
export const reattachRow = (lab: Lab) =>
  measured(lab, "7a", async (service) => {
    const { reattachExecutions, streamsPerExecution } = lab.options
    const created = await pool(reattachExecutions, 20, async () => {
      const reply = await json(approvalExecute(service))
      if (reply.status !== 200 || reply.body?.data?.status !== "suspended") {
        throw new Error(`execute answered ${reply.status}`)
      }
      return String(reply.body.data.executionId)
    }, OPEN_DEADLINE_MS)
    const ids = created.results
    const opened = await pool(ids.length * streamsPerExecution, 100, (index) =>
      openStream(
        {
          url: service.url,
          method: "GET",
          path: `/workflows/approval/executions/${encodeURIComponent(ids[index % ids.length])}/stream`
        },
        (received) => received.includes("workflow-suspended")
      ), OPEN_DEADLINE_MS)
    return {
      count: opened.results.length,
      notes: [...failures(created, "executions"), ...failures(opened, "re-attach streams")],
      release: () => closeAll(opened.results)
    }
  })

/** An input the bench's fake answers slowly: a word every 200 ms for about two minutes. */
const SLOW_INPUT = "Please answer slowly"

/** Row 7b: agent streams held open while the fake answers slowly, each counted once its first text delta arrived. */
export const agentStreamsRow = (lab: Lab) =>
  measured(lab, "7b", async (service) => {
    const opened = await pool(lab.options.agentStreams, 100, () =>
      openStream(
        { url: service.url, method: "POST", path: `/agents/${AGENT_ID}/stream`, body: { input: SLOW_INPUT } },
        serviceTextDelta
      ), OPEN_DEADLINE_MS)
    return {
      count: opened.results.length,
      notes: failures(opened, "agent streams"),
      release: () => closeAll(opened.results)
    }
  })

/** Row 7c: suspended `approval` executions created over HTTP at 50 connections. */
export const suspendedRow = (lab: Lab) =>
  measured(lab, "7c", async (service) => {
    const result = await loadCount(approvalExecute(service), {
      connections: lab.options.connections,
      amount: lab.options.suspendedExecutions,
      deadlineMs: CREATE_DEADLINE_MS
    })
    const notes = [
      `${Math.round(result.perSecond)} suspended executions/s while creating them`,
      ...(result.errors > 0 ? [`${result.errors} requests failed (a non-2xx answer, an error or a 30 s timeout)`] : []),
      ...(result.total + result.errors < lab.options.suspendedExecutions
        ? [`stopped at the ${CREATE_DEADLINE_MS / 60_000}-minute deadline`]
        : [])
    ]
    return { count: result.total, notes, release: async () => undefined }
  })
