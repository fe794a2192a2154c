/**
 * Schema-derived fuzzing of every POST route of the API against the built service (`node dist/main.js`):
 * used by test/fuzz.test.ts (a few thousand cases) and `npm run fuzz -- --cases N` (long runs).
 */
import type { HttpApi, HttpApiGroup } from "@effect/platform"
import fc from "fast-check"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { type FuzzCase, fuzzCase, type KnownIds } from "./fuzz-cases.js"
import { bodyText, describeBody } from "./fuzz-mutations.js"
import { judge } from "./fuzz-oracle.js"
import { postRoutes } from "./fuzz-routes.js"
import { describeRpcCase, rpcCases, rpcProbes, sendRpcCase } from "./fuzz-rpc.js"
import { getData, postData, send, type Service, startService } from "./fuzz-service.js"

export interface FuzzOptions<Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R> {
  readonly api: HttpApi.HttpApi<Id, Groups, E, R>
  /** The package root: the service is `<root>/dist/main.js`. */
  readonly root: string
  readonly cases: number
  readonly seed: number
  /** With JWT authentication configured (and half the requests without a valid token). */
  readonly jwt: boolean
  readonly concurrency?: number
  /** Per request; an answer that takes longer is a hang. */
  readonly timeoutMs?: number
  readonly onProgress?: (done: number, total: number) => void
  /** Cases sent over /rpc after those over HTTP (default a quarter of `cases`), then the /rpc probes. */
  readonly rpcCases?: number
}

export interface Violation {
  readonly index: number
  readonly route: string
  readonly mutation: string
  readonly request: string
  readonly reason: string
}

export interface FuzzReport {
  readonly mode: "open" | "jwt"
  readonly seed: number
  readonly cases: number
  readonly ran: number
  readonly durationMs: number
  readonly statuses: Readonly<Record<string, number>>
  /** Requests per route (`group.endpoint`): every POST route of the API is listed, even with none. */
  readonly routes: Readonly<Record<string, number>>
  /** Requests and their total answer time (ms) per mutation. */
  readonly mutations: Readonly<Record<string, { readonly count: number; readonly ms: number }>>
  readonly violations: ReadonlyArray<Violation>
  /** The slowest answers, slowest first. */
  readonly slowest: ReadonlyArray<{ readonly ms: number; readonly request: string }>
}

const ids = (data: unknown, field: "id" | "name"): ReadonlyArray<string> =>
  Array.isArray(data)
    ? data.map((item) => (item as Record<string, unknown>)[field]).filter((id): id is string => typeof id === "string")
    : []

/**
 * Ids the app has, from its own list routes, and executions in each state (suspended, running for
 * minutes, completed) so suspend, resume and cancel meet real ones.
 */
const knownIds = async (service: Service, seed: number): Promise<KnownIds> => {
  const workflows = ids(await getData(service, "/workflows"), "id")
  const starts: Array<[string, unknown]> = [
    ["approval", { amount: 500 }],
    ["approval", { amount: 500 }],
    ["approval", { amount: 500 }],
    ["slow", { ms: 10 * 60_000 }],
    ["pipeline", { text: "seed", n: 1 }]
  ]
  const executions: Array<string> = []
  for (const [index, [workflow, input]] of starts.entries()) {
    if (!workflows.includes(workflow)) continue
    const executionId = `fuzz-${seed}-${workflow}-${index}`
    const started = await postData(service, `/workflows/${workflow}/run`, { input, options: { executionId } })
    if (started !== undefined) executions.push(executionId)
  }
  return {
    "agents.id": ids(await getData(service, "/agents"), "id"),
    "tools.name": ids(await getData(service, "/tools"), "name"),
    "workflows.id": workflows,
    "workflows.executionId": executions,
    "mcp.id": ids(await getData(service, "/mcp/servers"), "id")
  }
}

/**
 * `POST /updates {packageName}` runs `npm install` of a real dependency: never let a generated name be
 * one (the child's registry is unreachable anyway, so nothing could be fetched).
 */
const withoutRealPackages = (root: string) => {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>
  }
  const names = new Set(Object.keys(manifest.dependencies ?? {}))
  return (fuzzed: FuzzCase): FuzzCase => {
    const value = fuzzed.body.kind === "json" ? fuzzed.body.value as { packageName?: unknown } | null : undefined
    return typeof value === "object" && value !== null && typeof value.packageName === "string" &&
        names.has(value.packageName)
      ? { ...fuzzed, body: { kind: "json", value: { ...value, packageName: `not-${value.packageName}` } } }
      : fuzzed
  }
}

/**
 * /health is asked this often through a run; an answer slower than `STALL_MS` is a stalled event loop.
 * 15 s: on CI's loaded machine /health has taken 5 s during the HTTP cases and 10 s during the /rpc probes'
 * 20 MB flood (1.6-3.1 s on a quiet one); the stalls this exists for grow exponentially (13 s at 30
 * characters of the ReDoS input, 106 s at 40).
 */
const HEARTBEAT_MS = 250
export const STALL_MS = 15_000

const isTransportError = (reason: string) => /^(no answer within|connection error|answer cut)/.test(reason)

/** Requests that got no answer because the service was dying are one violation: its death. */
const foldIntoDeath = (violations: Array<Violation>) => {
  const death = violations.findIndex((violation) => violation.reason.startsWith("the service exited"))
  if (death < 0) return
  const [first] = violations.splice(death, 1)
  const kept = violations.filter((violation) => !isTransportError(violation.reason))
  const unanswered = violations.filter((violation) => isTransportError(violation.reason))
  const suspect = unanswered.sort((a, b) => a.index - b.index)[0]
  violations.splice(
    0,
    violations.length,
    ...kept,
    suspect === undefined ? first! : {
      ...suspect,
      reason: `${first!.reason}\n(${unanswered.length} requests got no answer; the first of them is shown)`
    }
  )
}

/** Small generated values (fast-check's "xsmall" size): many cheap requests rather than a few large ones. */
const sample = <A>(arbitrary: fc.Arbitrary<A>, seed: number, numRuns: number): Array<A> => {
  const global = fc.readConfigureGlobal()
  fc.configureGlobal({ ...global, baseSize: "xsmall" })
  try {
    return fc.sample(arbitrary, { seed, numRuns })
  } finally {
    fc.configureGlobal(global)
  }
}

const describe = (fuzz: FuzzCase) =>
  `POST ${fuzz.path.length > 200 ? `${fuzz.path.slice(0, 200)}…` : fuzz.path} auth=${fuzz.auth}${
    fuzz.chunked ? " chunked" : ""
  } body=${describeBody(fuzz.body)}`

const count = (record: Record<string, number>, key: string) => (record[key] = (record[key] ?? 0) + 1)

/** Runs `cases` generated requests, `concurrency` at a time, checking each answer and that the service lives on. */
export const fuzz = async <Id extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  options: FuzzOptions<Id, Groups, E, R>
): Promise<FuzzReport> => {
  const started = Date.now()
  const timeoutMs = options.timeoutMs ?? 20_000
  const routes = postRoutes(options.api)
  const service = await startService({ root: options.root, jwt: options.jwt })
  const statuses: Record<string, number> = {}
  const perRoute: Record<string, number> = Object.fromEntries(routes.map((route) => [route.name, 0]))
  const mutations: Record<string, { count: number; ms: number }> = {}
  const violations: Array<Violation> = []
  let ran = 0
  const slowest: Array<{ ms: number; request: string }> = []
  try {
    const known = await knownIds(service, options.seed)
    const cases = sample(fuzzCase(routes, known, options.jwt), options.seed, options.cases).map(
      withoutRealPackages(options.root)
    )
    const dead = () => service.child.exitCode !== null || service.child.signalCode !== null
    const died = (index: number, fuzzed: FuzzCase | undefined) =>
      violations.push({
        index,
        route: fuzzed?.route.name ?? "-",
        mutation: fuzzed?.mutation ?? "-",
        request: fuzzed === undefined ? "-" : describe(fuzzed),
        reason: `the service exited (code ${service.child.exitCode}, signal ${service.child.signalCode}): ${
          service.stderrTail().slice(-1_000)
        }`
      })
    const alive = async (index: number) => {
      const tools = await send(service.port, {
        method: "GET",
        path: "/tools",
        authorization: service.authorization("valid")
      }, timeoutMs)
      if ("answer" in tools && tools.answer.status === 200) return true
      violations.push({
        index,
        route: "GET /tools",
        mutation: "-",
        request: "GET /tools",
        reason: `health check: ${"error" in tools ? tools.error : tools.answer.status}`
      })
      return false
    }
    let next = 0
    let stopped = false
    let finished = false
    const inFlight = new Map<number, FuzzCase>()
    // The oracle for work that blocks the event loop (a backtracking pattern, a huge schema compiled): every
    // route answers slowly then, so /health is asked all along and the cases in flight are named.
    const heartbeat = async () => {
      while (!finished && !dead()) {
        const sentAt = Date.now()
        const before = new Map(inFlight)
        const health = await send(service.port, {
          method: "GET",
          path: "/health",
          authorization: service.authorization("valid")
        }, timeoutMs)
        const ms = Date.now() - sentAt
        if (ms > STALL_MS || ("answer" in health && health.answer.status !== 200)) {
          // In flight when /health was asked or when it was answered.
          const during = new Map([...before, ...inFlight])
          const suspects = [...during].map(([index, fuzzed]) => `${fuzzed.route.name} [${fuzzed.mutation}] #${index}`)
          const [first] = during
          violations.push({
            index: first?.[0] ?? ran,
            route: "GET /health",
            mutation: first?.[1].mutation ?? "-",
            request: first === undefined ? "GET /health" : describe(first[1]),
            reason: `event loop stalled: GET /health answered in ${ms} ms (at most ${STALL_MS}) ` +
              `${"error" in health ? health.error : health.answer.status}; in flight: ${suspects.join(", ") || "-"}`
          })
        }
        await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS))
      }
    }
    const beating = heartbeat()
    const worker = async () => {
      while (!stopped && next < cases.length) {
        const index = next++
        const fuzzed = cases[index]!
        const sentAt = Date.now()
        inFlight.set(index, fuzzed)
        const outcome = await send(service.port, {
          path: fuzzed.path,
          body: bodyText(fuzzed.body),
          authorization: service.authorization(fuzzed.auth),
          chunked: fuzzed.chunked,
          console: fuzzed.route.routeClass === "console"
        }, timeoutMs)
        inFlight.delete(index)
        ran++
        const ms = Date.now() - sentAt
        slowest.push({ ms, request: `${fuzzed.route.name} [${fuzzed.mutation}] #${index}` })
        slowest.sort((a, b) => b.ms - a.ms).splice(5)
        const mutation = (mutations[fuzzed.mutation] ??= { count: 0, ms: 0 })
        mutation.count++
        mutation.ms += ms
        count(perRoute, fuzzed.route.name)
        count(statuses, "answer" in outcome ? String(outcome.answer.status) : "no answer")
        if (dead()) {
          if (!stopped) died(index, fuzzed)
          stopped = true
          return
        }
        // A resume answers when the execution settles: the `slow` one (started for 10 minutes above), once an
        // earlier case suspended it, is resumed into its 10-minute step, past any client's timeout, by design.
        const waitsBySpec = fuzzed.route.name === "workflows.resumeExecution" &&
          fuzzed.path.startsWith("/workflows/slow/") && "error" in outcome &&
          isTransportError(outcome.error)
        const reason = waitsBySpec ? undefined : judge(fuzzed, outcome, options.jwt)
        if (reason !== undefined) {
          violations.push({
            index,
            route: fuzzed.route.name,
            mutation: fuzzed.mutation,
            request: describe(fuzzed),
            reason
          })
        }
        if (ran % 250 === 0 && !(await alive(index))) stopped = true
        options.onProgress?.(ran, cases.length)
      }
    }
    await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker))
    // The /rpc door: the same mutations as payloads of raw RPC requests, then the probes of items 4, 7, 8.
    const rpcUrl = `ws://127.0.0.1:${service.port}/rpc`
    const overRpc = stopped ? [] : rpcCases(options.seed, options.rpcCases ?? Math.ceil(options.cases / 4))
    let nextRpc = 0
    const rpcWorker = async () => {
      while (!stopped && nextRpc < overRpc.length) {
        const index = nextRpc++
        const fuzzed = overRpc[index]!
        const reason = await sendRpcCase(rpcUrl, fuzzed, timeoutMs)
        count(statuses, "rpc")
        if (dead()) {
          if (!stopped) died(cases.length + index, undefined)
          stopped = true
          return
        }
        if (reason !== undefined) {
          violations.push({
            index: cases.length + index,
            route: `/rpc ${fuzzed.tag}`,
            mutation: fuzzed.mutation,
            request: describeRpcCase(fuzzed),
            reason
          })
        }
      }
    }
    await Promise.all(Array.from({ length: options.concurrency ?? 4 }, rpcWorker))
    if (!stopped) {
      for (const reason of await rpcProbes(rpcUrl)) {
        violations.push({
          index: cases.length + overRpc.length,
          route: "/rpc probes",
          mutation: "-",
          request: "-",
          reason
        })
      }
    }
    finished = true
    await beating
    if (!stopped) {
      if (dead()) died(cases.length, undefined)
      else await alive(cases.length)
    }
    if (dead()) foldIntoDeath(violations)
  } finally {
    await service.stop()
  }
  return {
    mode: options.jwt ? "jwt" : "open",
    seed: options.seed,
    cases: options.cases,
    ran,
    durationMs: Date.now() - started,
    statuses,
    routes: perRoute,
    mutations,
    violations,
    slowest
  }
}

// Numbers, ids and quoted values vary between occurrences of one cause.
const causeOf = (violation: Violation) =>
  `${violation.route} | ${violation.mutation.replace(/\+nul-in-path$/, "")} | ${
    violation.reason.replace(/"[^"]*"/g, "\"…\"").replace(/\d+/g, "N").slice(0, 90)
  }`

/** A readable summary: counts, then each distinct cause once with its first request. */
export const formatReport = (report: FuzzReport): string => {
  const lines = [
    `fuzz ${report.mode}: ${report.ran}/${report.cases} cases in ${
      (report.durationMs / 1000).toFixed(1)
    } s, seed ${report.seed}, ` +
    `${report.violations.length} violation(s)`,
    `  statuses: ${Object.entries(report.statuses).map(([status, n]) => `${status}×${n}`).join(" ")}`,
    `  mutations (count, mean ms): ${
      Object.entries(report.mutations).map(([mutation, { count, ms }]) =>
        `${mutation}×${count} ${Math.round(ms / count)}`
      ).join(", ")
    }`,
    `  slowest: ${report.slowest.map(({ ms, request }) => `${request} ${ms} ms`).join(", ")}`
  ]
  const causes = new Map<string, { readonly first: Violation; count: number }>()
  for (const violation of report.violations) {
    const key = causeOf(violation)
    const seen = causes.get(key)
    if (seen === undefined) causes.set(key, { first: violation, count: 1 })
    else seen.count++
  }
  for (const { first, count: times } of causes.values()) {
    lines.push(`  ✗ ${times}× ${first.route} [${first.mutation}] case #${first.index}: ${first.reason.slice(0, 600)}`)
    lines.push(`      ${first.request}`)
  }
  return lines.join("\n")
}
