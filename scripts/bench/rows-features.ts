/**
 * Row 12 (issue #44 item 2, "pay for what you use"): each agent feature alone, the same agent with one
 * feature on against none. The feature app (scripts/bench/feature-app.ts) embeds the build under test and
 * serves one agent per feature; the row times their POST /agents/:id/text round-robin, then reads the
 * app's CPU time over a run of requests to each.
 */
import { copyFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { sleep } from "../support/service.js"
import { interleaved, keepAliveAgent, type Target, timed } from "./client.js"
import type { Lab } from "./lab.js"
import { processCpuMs, REPO_ROOT, startServiceOn, temporaryDirectory } from "./processes.js"
import { type Cells, FEATURE_AGENTS, type FeatureAgent, percentile, type RowResult } from "./table.js"

const LATENCY_ROUNDS = 300
const WARMUP_ROUNDS = 50
const CPU_REQUESTS = 500
const CPU_ROUNDS = 10
const DEADLINE_MS = 10 * 60_000
// Lets the work a call leaves behind (history commit, a detached onEnd) land in its own agent's CPU reading.
const SETTLE_MS = 50

export interface FeatureMeasurement {
  readonly agent: FeatureAgent
  /** Milliseconds of each measured request. */
  readonly times: ReadonlyArray<number>
  /** The app's CPU milliseconds per request over the agent's run. */
  readonly cpuMs: number
}

/** Per agent its p50 and CPU per request; beside every agent but plain, its p50 minus plain's. */
export const featureCells = (measurements: ReadonlyArray<FeatureMeasurement>): Cells => {
  const p50 = (agent: FeatureAgent) => percentile(measurements.find((m) => m.agent === agent)?.times ?? [], 0.5)
  const plain = p50("plain")
  return Object.fromEntries(measurements.flatMap(({ agent, cpuMs }) => [
    [`${agent}P50`, p50(agent)],
    ...(agent === "plain" ? [] : [[`${agent}Added`, p50(agent) - plain]]),
    [`${agent}CpuMs`, cpuMs]
  ]))
}

const COMPILED_APP = fileURLToPath(new URL("feature-app.js", import.meta.url))

/**
 * The feature app for the build whose entry is `serviceMain`: the compiled one for the working tree's;
 * for a reference build, a copy in its root, so that its imports resolve to that build's node_modules.
 */
const featureAppFor = (serviceMain: string): { readonly main: string; readonly root: string } => {
  const root = resolve(dirname(serviceMain), "..")
  if (root === resolve(REPO_ROOT)) return { main: COMPILED_APP, root }
  const main = join(root, ".bench-feature-app.js")
  copyFileSync(COMPILED_APP, main)
  return { main, root }
}

const textTarget = (url: string, agent: FeatureAgent): Target => ({
  url,
  method: "POST",
  path: `/agents/${agent}/text`,
  body: { input: "hi" }
})

/** `count` requests one at a time; the app's CPU milliseconds over them, and how many were answered. */
const cpuOver = async (pid: number, target: Target, count: number, deadline: number) => {
  const agent = keepAliveAgent()
  let answered = 0
  let errors = 0
  const before = processCpuMs(pid)
  try {
    for (let index = 0; index < count && Date.now() < deadline; index++) {
      const result = await timed(agent, target).catch(() => undefined)
      if (result === undefined || result.status < 200 || result.status > 299) errors++
      else answered++
    }
  } finally {
    agent.destroy()
  }
  await sleep(SETTLE_MS)
  return { cpuMs: processCpuMs(pid) - before, answered, errors }
}

/**
 * CPU_REQUESTS per agent, in CPU_ROUNDS batches taken round-robin and each round starting one agent later,
 * so a garbage collection or a drift of the heap falls on every agent alike: each one's CPU ms per request.
 */
const cpuPerRequest = async (pid: number, url: string) => {
  const deadline = Date.now() + DEADLINE_MS
  const totals = FEATURE_AGENTS.map(() => ({ cpuMs: 0, answered: 0 }))
  let errors = 0
  for (let round = 0; round < CPU_ROUNDS; round++) {
    for (let step = 0; step < FEATURE_AGENTS.length; step++) {
      const index = (round + step) % FEATURE_AGENTS.length
      const batch = await cpuOver(pid, textTarget(url, FEATURE_AGENTS[index]), CPU_REQUESTS / CPU_ROUNDS, deadline)
      totals[index].cpuMs += batch.cpuMs
      totals[index].answered += batch.answered
      errors += batch.errors
    }
  }
  return { perRequest: totals.map((total) => total.cpuMs / total.answered), errors }
}

/** Row 12: the feature app on a new SQLite file, its agents timed round-robin, then each one's CPU per request. */
export const featuresRow = async (lab: Lab): Promise<RowResult> => {
  const { main, root } = featureAppFor(lab.serviceMain)
  const databaseFile = join(temporaryDirectory("bench-features-"), "features.db")
  const app = await startServiceOn(main, `file:${databaseFile}`, {
    ...(await lab.modelEnv()),
    FEATURE_APP_PACKAGE: root
  })
  try {
    const latency = await interleaved(
      FEATURE_AGENTS.map((agent) => ({ target: textTarget(app.url, agent) })),
      { count: LATENCY_ROUNDS, warmup: WARMUP_ROUNDS, deadlineMs: DEADLINE_MS }
    )
    const cpu = await cpuPerRequest(app.pid, app.url)
    const errors = latency.errors + cpu.errors
    const measurements = FEATURE_AGENTS.map((agent, index): FeatureMeasurement => ({
      agent,
      times: latency.times[index],
      cpuMs: cpu.perRequest[index]
    }))
    const count = Math.min(...latency.times.map((times) => times.length))
    return {
      id: "12",
      cells: { ...featureCells(measurements), count, errors },
      notes: [
        ...(errors > 0 ? [`${errors} failed requests`] : []),
        ...(count < LATENCY_ROUNDS ? [`only ${count} of ${LATENCY_ROUNDS} rounds within the deadline`] : [])
      ]
    }
  } finally {
    await app.stop()
  }
}
