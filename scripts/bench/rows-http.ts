/**
 * Rows 1 to 5: throughput against raw node:http and the minimal HttpApi app, and the agent relay's
 * latency and throughput against the fake model called directly. The server they load, and its routes,
 * are the lab's target: our service, or a peer framework's (`--peer`, scripts/bench/peer.ts).
 */
import { interleaved, load, type Target } from "./client.js"
import { chatRequest, fakeTextDelta, type Lab } from "./lab.js"
import { startMinimalApp, startRawServer, withCpuPerRequest } from "./processes.js"
import { median, percentile, type RowResult } from "./table.js"

const errorNote = (errors: number, what: string) => (errors > 0 ? [`${errors} failed requests (${what})`] : [])

const LATENCY_DEADLINE_MS = 10 * 60_000

/** A load on the service, warmed up first, with the service's CPU per answered request over the measured part. */
const measuredLoad = async (
  pid: number,
  target: Target,
  settings: { readonly connections: number; readonly seconds: number }
) => {
  await load(target, { ...settings, seconds: Math.min(2, settings.seconds), warmupSeconds: 0 })
  const { cpuMsPerRequest, result } = await withCpuPerRequest(
    pid,
    () => load(target, { ...settings, warmupSeconds: 0 }),
    (result) => result.total
  )
  return { ...result, cpuMsPerRequest }
}

/** Row 1: GET /agents at 50 connections on raw node:http, the minimal HttpApi app and the service. */
export const getAgentsRow = async (lab: Lab): Promise<RowResult> => {
  const service = await lab.service()
  const raw = await startRawServer()
  const minimal = await startMinimalApp()
  try {
    const settings = { connections: lab.options.connections, seconds: lab.options.seconds }
    const get = (url: string): Target => ({ url, method: "GET", path: lab.target.agents.path })
    const rawLoad = await load(get(raw.url), settings)
    const minimalLoad = await load(get(minimal.url), settings)
    const oursLoad = await measuredLoad(service.pid, get(service.url), settings)
    return {
      id: "1",
      cells: {
        raw: rawLoad.perSecond,
        minimal: minimalLoad.perSecond,
        ours: oursLoad.perSecond,
        minimalOverRaw: minimalLoad.perSecond / rawLoad.perSecond,
        oursOverRaw: oursLoad.perSecond / rawLoad.perSecond,
        oursOverMinimal: oursLoad.perSecond / minimalLoad.perSecond,
        cpuMsPerRequest: oursLoad.cpuMsPerRequest,
        errors: rawLoad.errors + minimalLoad.errors + oursLoad.errors
      },
      notes: errorNote(rawLoad.errors + minimalLoad.errors + oursLoad.errors, "raw, minimal and ours together")
    }
  } finally {
    await raw.stop()
    await minimal.stop()
  }
}

/** Row 2: POST /text one at a time against the same chat request sent to the fake directly, interleaved. */
export const textLatencyRow = async (lab: Lab): Promise<RowResult> => {
  const service = await lab.service()
  const fake = await lab.fake()
  const counts = { count: 500, warmup: 50, deadlineMs: LATENCY_DEADLINE_MS }
  const { cpuMsPerRequest, result: { errors, times } } = await withCpuPerRequest(service.pid, () =>
    interleaved([
      { target: { url: fake.url, method: "POST", path: "/v1/chat/completions", body: chatRequest("hi", false) } },
      { target: { url: service.url, method: "POST", ...lab.target.text } }
    ], counts), (result) => result.times[1].length + counts.warmup)
  const [fakeTimes, oursTimes] = times
  const cells = {
    fakeP50: percentile(fakeTimes, 0.5),
    fakeP99: percentile(fakeTimes, 0.99),
    oursP50: percentile(oursTimes, 0.5),
    oursP99: percentile(oursTimes, 0.99),
    count: oursTimes.length,
    errors,
    cpuMsPerRequest
  }
  return {
    id: "2",
    cells: { ...cells, addedP50: cells.oursP50 - cells.fakeP50, addedP99: cells.oursP99 - cells.fakeP99 },
    notes: errorNote(errors, "fake and ours")
  }
}

/** Row 3: POST /text at 50 connections over the fake's own non-streaming chat completions at 50 connections. */
export const textThroughputRow = async (lab: Lab): Promise<RowResult> => {
  const service = await lab.service()
  const fake = await lab.fake()
  const settings = { connections: lab.options.connections, seconds: lab.options.seconds }
  const fakeLoad = await load({
    url: fake.url,
    method: "POST",
    path: "/v1/chat/completions",
    body: chatRequest("hi", false)
  }, settings)
  const oursLoad = await measuredLoad(service.pid, { url: service.url, method: "POST", ...lab.target.text }, settings)
  return {
    id: "3",
    cells: {
      fake: fakeLoad.perSecond,
      ours: oursLoad.perSecond,
      ratio: oursLoad.perSecond / fakeLoad.perSecond,
      cpuMsPerRequest: oursLoad.cpuMsPerRequest,
      errors: fakeLoad.errors + oursLoad.errors
    },
    notes: errorNote(fakeLoad.errors + oursLoad.errors, "fake and ours")
  }
}

/** Row 4: time to the first text delta, the service's /stream against the fake's streaming completion, interleaved. */
export const streamFirstDeltaRow = async (lab: Lab): Promise<RowResult> => {
  const service = await lab.service()
  const fake = await lab.fake()
  const counts = { count: 200, warmup: 20, deadlineMs: LATENCY_DEADLINE_MS }
  const { cpuMsPerRequest, result: { errors, times } } = await withCpuPerRequest(service.pid, () =>
    interleaved([
      {
        target: { url: fake.url, method: "POST", path: "/v1/chat/completions", body: chatRequest("hi", true) },
        ready: fakeTextDelta
      },
      {
        target: { url: service.url, method: "POST", path: lab.target.stream.path, body: lab.target.stream.body },
        ready: lab.target.stream.ready
      }
    ], counts), (result) => result.times[1].length + counts.warmup)
  const [fakeTimes, oursTimes] = times
  const cells = { fake: median(fakeTimes), ours: median(oursTimes), count: oursTimes.length, errors, cpuMsPerRequest }
  return { id: "4", cells: { ...cells, added: cells.ours - cells.fake }, notes: errorNote(errors, "fake and ours") }
}

/** Row 5: the 7-step pipeline workflow executed to completion, durably, at 50 connections. */
export const pipelineRow = async (lab: Lab): Promise<RowResult> => {
  const service = await lab.service()
  const result = await measuredLoad(
    service.pid,
    { url: service.url, method: "POST", ...lab.target.pipeline },
    { connections: lab.options.connections, seconds: lab.options.seconds }
  )
  return {
    id: "5",
    cells: { ours: result.perSecond, errors: result.errors, cpuMsPerRequest: result.cpuMsPerRequest },
    notes: errorNote(result.errors, "ours")
  }
}
