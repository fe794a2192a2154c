/**
 * The bench's client side over loopback: autocannon for throughput, timed one-at-a-time requests for
 * latency, and many long-lived streams for memory. Every loop is bounded in count and time.
 */
import autocannon from "autocannon"
import { Agent, type ClientRequest, request } from "node:http"

export interface Target {
  readonly url: string
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: unknown
}

const headersFor = (payload: string | undefined): Record<string, string | number> =>
  payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }

export interface LoadResult {
  /** Answered requests with a 2xx per second over the measured time. */
  readonly perSecond: number
  readonly total: number
  /** Non-2xx answers, errors and timeouts. */
  readonly errors: number
}

const autocannonFor = (target: Target, connections: number, duration: number) => {
  const payload = target.body === undefined ? undefined : JSON.stringify(target.body)
  return autocannon({
    url: `${target.url}${target.path}`,
    method: target.method,
    connections,
    duration,
    timeout: 30,
    ...(payload === undefined ? {} : { body: payload, headers: { "content-type": "application/json" } })
  })
}

const resultOf = (result: autocannon.Result): LoadResult => {
  const ok = result["2xx"]
  return { perSecond: ok / result.duration, total: ok, errors: result.non2xx + result.errors + result.timeouts }
}

/** autocannon at `connections` for `seconds` (plus a short unmeasured warm-up); counts only 2xx answers. */
export const load = async (
  target: Target,
  options: { readonly connections: number; readonly seconds: number; readonly warmupSeconds?: number }
): Promise<LoadResult> => {
  const [result] = await loadTogether([{ target, connections: options.connections }], options)
  return result
}

/**
 * One autocannon per target, all at the same time, each with its own connections: first an unmeasured
 * warm-up on all of them, then the measured `seconds` on all of them; each target's result, in order.
 */
export const loadTogether = async (
  targets: ReadonlyArray<{ readonly target: Target; readonly connections: number }>,
  options: { readonly seconds: number; readonly warmupSeconds?: number }
): Promise<Array<LoadResult>> => {
  const runAll = (duration: number) =>
    Promise.all(targets.map(({ connections, target }) => autocannonFor(target, connections, duration)))
  const warmup = options.warmupSeconds ?? Math.min(2, options.seconds)
  if (warmup > 0) await runAll(warmup)
  return (await runAll(options.seconds)).map(resultOf)
}

/** autocannon until `amount` requests are answered or `deadlineMs` passes; counts only 2xx answers. */
export const loadCount = async (
  target: Target,
  options: { readonly connections: number; readonly amount: number; readonly deadlineMs: number }
): Promise<LoadResult> => {
  const payload = target.body === undefined ? undefined : JSON.stringify(target.body)
  const instance = autocannon({
    url: `${target.url}${target.path}`,
    method: target.method,
    connections: options.connections,
    amount: options.amount,
    timeout: 30,
    ...(payload === undefined ? {} : { body: payload, headers: { "content-type": "application/json" } })
  }) as Promise<autocannon.Result> & { readonly stop: () => void }
  const timer = setTimeout(() => instance.stop(), options.deadlineMs)
  try {
    return resultOf(await instance)
  } finally {
    clearTimeout(timer)
  }
}

/** `count` requests through one keep-alive connection, one at a time. */
export const keepAliveAgent = () => new Agent({ keepAlive: true, maxSockets: 1 })

export interface Timed {
  readonly ms: number
  readonly status: number
}

/**
 * One request; resolves with its status and the time from sending it to the moment `ready` first
 * returns true on the bytes received so far (the end of the body when `ready` is omitted). The body is
 * always read to its end, so the connection can be reused.
 */
export const timed = (
  agent: Agent | false,
  target: Target,
  ready?: (received: string) => boolean,
  timeoutMs = 30_000
): Promise<Timed> =>
  new Promise((resolve, reject) => {
    const payload = target.body === undefined ? undefined : JSON.stringify(target.body)
    const url = new URL(target.path, target.url)
    const started = performance.now()
    let readyAt: number | undefined
    let received = ""
    const req = request({
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      method: target.method,
      agent,
      headers: headersFor(payload),
      timeout: timeoutMs
    }, (res) => {
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        if (readyAt !== undefined || ready === undefined) return
        received += chunk
        if (ready(received)) readyAt = performance.now()
      })
      res.on("end", () => {
        const ended = performance.now()
        if (ready !== undefined && readyAt === undefined) {
          return reject(
            new Error(`${target.path}: answered ${res.statusCode} without the awaited frame: ${received.slice(0, 300)}`)
          )
        }
        resolve({ ms: (readyAt ?? ended) - started, status: res.statusCode ?? 0 })
      })
      res.on("error", reject)
    })
    req.on("timeout", () => req.destroy(new Error(`${target.path}: no answer within ${timeoutMs} ms`)))
    req.on("error", reject)
    req.end(payload)
  })

/**
 * Sends `warmup` then `count` rounds one request at a time, each round one request to every target
 * in turn (so every target sees the same machine load); gives each target's measured times.
 */
export const interleaved = async (
  targets: ReadonlyArray<{ readonly target: Target; readonly ready?: (received: string) => boolean }>,
  options: { readonly count: number; readonly warmup: number; readonly deadlineMs: number }
): Promise<{ readonly times: Array<Array<number>>; readonly errors: number }> => {
  const agents = targets.map(() => keepAliveAgent())
  const times = targets.map((): Array<number> => [])
  const deadline = Date.now() + options.deadlineMs
  let errors = 0
  try {
    for (let round = 0; round < options.warmup + options.count && Date.now() < deadline; round++) {
      for (const [index, { ready, target }] of targets.entries()) {
        const result = await timed(agents[index], target, ready).catch(() => undefined)
        if (result === undefined || result.status < 200 || result.status > 299) errors++
        else if (round >= options.warmup) times[index].push(result.ms)
      }
    }
  } finally {
    for (const agent of agents) agent.destroy()
  }
  return { times, errors }
}

export interface OpenStream {
  readonly close: () => void
}

/**
 * Opens one long-lived stream on its own connection; resolves when `ready` first holds on the bytes
 * received (the stream stays open and its further bytes are discarded), rejects on an error status,
 * an early end or after `timeoutMs`.
 */
export const openStream = (
  target: Target,
  ready: (received: string) => boolean,
  timeoutMs = 60_000
): Promise<OpenStream> =>
  new Promise((resolve, reject) => {
    const payload = target.body === undefined ? undefined : JSON.stringify(target.body)
    const url = new URL(target.path, target.url)
    let settled = false
    let req: ClientRequest | undefined = undefined
    const fail = (error: Error) => {
      if (settled) return
      settled = true
      req?.destroy()
      reject(error)
    }
    const timer = setTimeout(() => fail(new Error("stream not ready in time")), timeoutMs)
    req = request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: target.method,
      agent: false,
      headers: headersFor(payload)
    }, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        return fail(new Error(`status ${res.statusCode}`))
      }
      let received = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        if (settled) return
        received = (received + chunk).slice(-16_384)
        if (ready(received)) {
          settled = true
          clearTimeout(timer)
          resolve({ close: () => req?.destroy() })
        }
      })
      res.on("end", () => fail(new Error("the stream ended before it was ready")))
      res.on("error", (error) => fail(error))
    })
    req.on("error", (error) => {
      clearTimeout(timer)
      fail(error)
    })
    req.end(payload)
  })

/**
 * Runs `task` on `count` indexes with at most `concurrency` at once, until `deadlineMs`; gives the
 * results that succeeded, how many failed, the first failure's message and how many the deadline left unstarted.
 */
export const pool = async <A>(
  count: number,
  concurrency: number,
  task: (index: number) => Promise<A>,
  deadlineMs: number
) => {
  const results: Array<A> = []
  const deadline = Date.now() + deadlineMs
  let next = 0
  let failed = 0
  let firstError: string | undefined
  const worker = async () => {
    while (next < count && Date.now() < deadline) {
      const index = next++
      await task(index).then((result) => results.push(result), (error: unknown) => {
        failed++
        firstError ??= error instanceof Error ? error.message : String(error)
      })
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker))
  return { results, failed, firstError, unstarted: count - Math.min(next, count) }
}

/** A JSON request's parsed body (any status); rejects on no answer. */
export const json = async (
  target: Target,
  timeoutMs = 30_000
): Promise<{ readonly status: number; readonly body: any }> => {
  const response = await fetch(`${target.url}${target.path}`, {
    method: target.method,
    signal: AbortSignal.timeout(timeoutMs),
    ...(target.body === undefined
      ? {}
      : { headers: { "content-type": "application/json" }, body: JSON.stringify(target.body) })
  })
  return { status: response.status, body: await response.json() }
}
