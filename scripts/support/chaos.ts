/**
 * Chaos: workflow load on the example workflows and the recorded chaos workflows (scripts/chaos-main.mjs)
 * while the service is SIGKILLed at random moments and restarted on the same database, and (Postgres) its
 * connections reset; then races of resume against cancel; then the invariants
 * (scripts/support/invariants.ts). Every loop is bounded in time and count; loopback only.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { readStepEvents, readStoredRows, resetConnections } from "./database.js"
import { Instances } from "./instances.js"
import { checkInvariants } from "./invariants.js"
import { checkQueue, QUEUE_WORKFLOW } from "./queued.js"
import { readRecordedStarts, RECORDED_WORKFLOWS } from "./recorded.js"
import { checkTicks, pauseTicks } from "./scheduled.js"
import { sleep } from "./service.js"
import { Violations } from "./violations.js"

export interface ChaosOptions {
  readonly databaseUrl: string
  readonly seconds: number
  /** SIGKILLs during the load (spread over it at random). */
  readonly kills: number
  /**
   * Postgres only: resets of every connection to the database (`pg_terminate_backend`) during the load,
   * spread like the kills. A store error is never an execution's failure: with resets, an execution in
   * error is a violation (a 500 always is).
   */
  readonly resets?: number
  /** Concurrent client loops. */
  readonly clients: number
  /** Resume-against-cancel trials on suspended `approval` executions, after the load. */
  readonly races: number
  /**
   * The service's entry: scripts/chaos-main.mjs by default (the example app and the recorded chaos
   * workflows, from the build), given the directory to record in as CHAOS_RECORD_DIR.
   */
  readonly main?: string
  /** Service processes sharing the database (Postgres; 1 by default): requests and kills go to random ones. */
  readonly instances?: number
  readonly env?: Readonly<Record<string, string>>
  readonly log?: (line: string) => void
}

export interface ChaosReport {
  readonly requests: number
  readonly interrupted: number
  readonly created: number
  readonly kills: number
  readonly resets: number
  readonly races: { readonly trials: number; readonly resumeWon: number; readonly cancelWon: number }
  readonly executionsChecked: number
  /** Starts the chaos workflows recorded (and of how many executions), each checked against the committed events. */
  readonly recorded: { readonly starts: number; readonly executions: number }
  /** Times the `chaos-tick` schedule fired (one execution each, none missed). */
  readonly ticks: number
  /**
   * `chaos-queue` (two at a time per group): starts answered as queued, executions, their committed
   * steps checked, and the most of one group seen running at once (never above 2).
   */
  readonly queue: {
    readonly answeredQueued: number
    readonly executions: number
    readonly spans: number
    readonly mostAtOnce: number
  }
  readonly violations: ReturnType<Violations["summary"]>
}

/** What the clients know of the executions they started. */
interface Known {
  readonly id: string
  readonly workflowId:
    | "approval"
    | "slow"
    | "pipeline"
    | "reminder"
    | "onboarding"
    | "batch"
    | "chaos-flow"
    | typeof QUEUE_WORKFLOW
}

const pick = <A>(items: ReadonlyArray<A>): A | undefined => items[Math.floor(Math.random() * items.length)]

/** An `onboarding` run: 1 to 8 accounts, 0 to 2 busy attempts before the activation succeeds, a sleep of up to 3 s. */
const onboardingInput = () => ({
  accounts: Array.from(
    { length: 1 + Math.floor(Math.random() * 8) },
    (_, i) => ({ name: `n${i}`, email: `n${i}@example.com` })
  ),
  busyAttempts: Math.floor(Math.random() * 3),
  waitSeconds: Math.random() * 3
})

/** A `chaos-flow` run: a sleep of up to 3 s, 1 to 12 items, 1 to 5 iterations, 0 to 2 failed attempts before the retried step succeeds. */
const chaosFlowInput = () => ({
  sleepMs: Math.floor(Math.random() * 3000),
  items: 1 + Math.floor(Math.random() * 12),
  iterations: 1 + Math.floor(Math.random() * 5),
  failures: Math.floor(Math.random() * 3)
})

/** The entry `npm run chaos` runs (the working directory is the package's, as for dist/main.js). */
export const CHAOS_MAIN = join(process.cwd(), "scripts/chaos-main.mjs")

export const runChaos = async (options: ChaosOptions): Promise<ChaosReport> => {
  const recordDir = mkdtempSync(join(tmpdir(), "chaos-record-"))
  try {
    return await runChaosRecording(options, recordDir)
  } finally {
    rmSync(recordDir, { recursive: true, force: true })
  }
}

const runChaosRecording = async (options: ChaosOptions, recordDir: string): Promise<ChaosReport> => {
  const log = options.log ?? (() => {})
  const violations = new Violations()
  const server = await Instances.make(options.instances ?? 1, options.databaseUrl, violations, {
    main: options.main ?? CHAOS_MAIN,
    env: { ...options.env, CHAOS_RECORD_DIR: recordDir }
  })
  /** Executions a client saw created (a 2xx naming them): they must exist at the end. */
  const created = new Map<string, Known>()
  let requests = 0
  let interrupted = 0
  const resets = options.resets ?? 0
  let resetsDone = 0
  let sequence = 0
  let answeredQueued = 0
  const newId = (prefix: string) => `${prefix}-${process.pid}-${++sequence}`

  const request = async (method: "GET" | "POST", path: string, body?: unknown) => {
    requests++
    const reply = await server.request(method, path, body)
    if (reply === undefined) interrupted++
    return reply
  }

  /** A transition on an execution this run created: 200, or a 4xx saying it is in another state. */
  const transition = async (known: Known, action: "suspend" | "resume" | "cancel") => {
    const body = action === "resume" ? { resumeData: { approved: true } } : { reason: "chaos" }
    const reply = await request("POST", `/workflows/${known.workflowId}/executions/${known.id}/${action}`, body)
    if (reply === undefined || reply.status >= 500 || reply.status === 200) return
    const message = String(reply.body?.error ?? "")
    if (/not found/.test(message)) violations.add("created execution not found", `${action} ${known.id}: ${message}`)
    else if (reply.status !== 400 && reply.status !== 404) {
      violations.add("unexpected answer", `${action} ${known.id}: ${reply.status} ${message}`)
    }
  }

  const start = async (
    workflowId: Known["workflowId"],
    how: "execute" | "run",
    input: unknown,
    expected: ReadonlyArray<string>
  ) => {
    const known: Known = { id: newId(workflowId), workflowId }
    const reply = await request("POST", `/workflows/${workflowId}/${how}`, {
      input,
      options: { executionId: known.id }
    })
    if (reply === undefined || reply.status >= 500) return
    if (reply.status === 200 || reply.status === 201) {
      created.set(known.id, known)
      const status = reply.body?.data?.status
      if (reply.body?.data?.waiting === "concurrency") answeredQueued++
      if (!expected.includes(status)) violations.add("unexpected status", `${how} ${workflowId} ${known.id}: ${status}`)
    } else {
      violations.add("start refused", `${how} ${workflowId} ${known.id}: ${reply.status} ${JSON.stringify(reply.body)}`)
    }
  }

  const some = (workflowId?: Known["workflowId"]) =>
    pick(
      [...created.values()].filter((known) => workflowId === undefined || known.workflowId === workflowId).slice(-50)
    )

  const actions: ReadonlyArray<readonly [number, () => Promise<void>]> = [
    [
      25,
      () => start("approval", "execute", { amount: 100 + Math.ceil(Math.random() * 900) }, ["suspended", "cancelled"])
    ],
    [8, () => start("approval", "execute", { amount: Math.ceil(Math.random() * 100) }, ["completed"])],
    [15, () => start("slow", "run", { ms: 200 + Math.floor(Math.random() * 1300) }, ["running"])],
    [8, () => start("pipeline", "run", { text: " chaos ", n: Math.floor(Math.random() * 30) }, ["running"])],
    [
      6,
      () =>
        start("pipeline", "execute", { text: " chaos ", n: Math.floor(Math.random() * 30) }, [
          "completed",
          "cancelled",
          "suspended"
        ])
    ],
    [14, async () => {
      const k = some("approval")
      if (k) await transition(k, "resume")
    }],
    [10, async () => {
      const k = some()
      if (k) await transition(k, "cancel")
    }],
    [8, async () => {
      const k = some(Math.random() < 0.7 ? "slow" : "pipeline")
      if (k) await transition(k, "suspend")
    }],
    [6, async () => {
      const k = some(Math.random() < 0.7 ? "slow" : "pipeline")
      if (k) await transition(k, "resume")
    }],
    // Issue #31: durable sleeps, loops, retries and polls.
    [6, () => start("reminder", "run", { message: "chaos", delaySeconds: Math.random() * 4 }, ["running"])],
    [5, () => start("onboarding", "run", onboardingInput(), ["running"])],
    [3, () => start("batch", "run", { count: 20 + Math.floor(Math.random() * 180) }, ["running"])],
    [3, async () => {
      const k = some(Math.random() < 0.5 ? "reminder" : "onboarding")
      if (k) await transition(k, Math.random() < 0.5 ? "suspend" : "resume")
    }],
    // Issue #31 settled 15: every step of these records its starts (cancelled at random above, never suspended).
    [10, () => start("chaos-flow", "run", chaosFlowInput(), ["running"])],
    // Issue #33: two at a time per group, the rest queued (running, waiting "concurrency").
    [8, () => start(QUEUE_WORKFLOW, "run", { group: Math.random() < 0.5 ? "a" : "b" }, ["running"])]
  ]
  const totalWeight = actions.reduce((sum, [weight]) => sum + weight, 0)
  const randomAction = () => {
    let roll = Math.random() * totalWeight
    for (const [weight, action] of actions) {
      roll -= weight
      if (roll < 0) return action
    }
    return actions[0][1]
  }

  await server.start()
  try {
    // The load lasts `seconds` of time with the service up: restarts do not eat into it.
    const loadStarted = Date.now()
    let downtime = 0
    const loadMs = options.seconds * 1000
    const upTime = () => Date.now() - loadStarted - downtime
    const client = async () => {
      while (upTime() < loadMs) {
        await server.whileDown(Date.now() + 120_000)
        if (upTime() >= loadMs) break
        await randomAction()()
      }
    }
    const killer = async () => {
      // One kill at a random moment in each of `kills` equal parts of the middle 80% of the load.
      const slots = Array.from({ length: options.kills }, (_, i) => 0.1 + (0.8 * (i + Math.random())) / options.kills)
      for (const slot of slots) {
        while (upTime() < slot * loadMs) await sleep(Math.min(100, slot * loadMs - upTime()))
        log(`SIGKILL ${server.kills + 1}/${options.kills} (${created.size} executions created so far)`)
        const killedAt = Date.now()
        await server.killAndRestart()
        downtime += Date.now() - killedAt
      }
    }
    const resetter = async () => {
      const slots = Array.from({ length: resets }, (_, i) => 0.1 + (0.8 * (i + Math.random())) / resets)
      for (const slot of slots) {
        while (upTime() < slot * loadMs) await sleep(Math.min(100, slot * loadMs - upTime()))
        const ended = await resetConnections(options.databaseUrl)
        log(`connection reset ${++resetsDone}/${resets}: ${ended} connections ended`)
      }
    }
    // Issue #33: a burst of six starts of one group (two slots) at the outset, so some always queue.
    await Promise.all(Array.from({ length: 6 }, () => start(QUEUE_WORKFLOW, "run", { group: "a" }, ["running"])))
    log(
      `load: ${options.clients} clients for ${options.seconds} s with ${options.kills} kills and ${resets} connection resets on ${
        redact(options.databaseUrl)
      }`
    )
    await Promise.all([killer(), resetter(), ...Array.from({ length: options.clients }, client)])
    await server.ensureUp()
    await pauseTicks(server, violations)

    const races = await raceResumeAndCancel(server, options.races, violations, log)
    for (const id of races.ids) created.set(id, { id, workflowId: "approval" })

    log("checking the invariants")
    const checked = await checkInvariants(server, options.databaseUrl, created, violations, log, recordDir)
    const ticks = await checkTicks(server, violations)
    log(`the tick schedule fired ${ticks} times`)
    const queue = await checkQueue(
      server,
      readRecordedStarts(recordDir, new Violations()),
      await readStepEvents(options.databaseUrl, RECORDED_WORKFLOWS),
      violations
    )
    log(
      `${QUEUE_WORKFLOW}: ${answeredQueued} starts answered queued; at most ${queue.mostAtOnce} of a group ran at once`
    )
    if (resets > 0) {
      // None of the example workflows fails on its own: an execution in error failed of a store error.
      for (
        const { id } of (await readStoredRows(options.databaseUrl)).executions.filter((row) => row.status === "error")
      ) {
        violations.add("execution failed under connection resets", id)
      }
    }
    return {
      requests,
      interrupted,
      created: created.size,
      kills: server.kills,
      resets: resetsDone,
      races: { trials: options.races, resumeWon: races.resumeWon, cancelWon: races.cancelWon },
      executionsChecked: checked.executions,
      recorded: checked.recorded,
      ticks,
      queue: { answeredQueued, ...queue },
      violations: violations.summary()
    }
  } finally {
    await server.stop()
  }
}

/**
 * Per trial: a suspended `approval`, then resume and cancel at the same moment. Exactly one may win
 * (resume: 200 completed; cancel: 200), the loser gets a 4xx (or resume a 200 saying it was cancelled),
 * and the stored state is the winner's.
 */
const raceResumeAndCancel = async (
  server: Instances,
  trials: number,
  violations: Violations,
  log: (line: string) => void
) => {
  const ids: Array<string> = []
  let resumeWon = 0
  let cancelWon = 0
  let next = 0
  const trial = async (id: string) => {
    const started = await server.request("POST", "/workflows/approval/execute", {
      input: { amount: 500 },
      options: { executionId: id }
    })
    if (started?.status !== 200 || started.body?.data?.status !== "suspended") {
      violations.add("race: could not suspend", `${id}: ${JSON.stringify(started?.body ?? "no answer")}`)
      return
    }
    ids.push(id)
    const path = `/workflows/approval/executions/${id}`
    const [resume, cancel] = await Promise.all([
      server.request("POST", `${path}/resume`, { resumeData: { approved: true } }),
      server.request("POST", `${path}/cancel`, { reason: "race" })
    ])
    if (resume === undefined || cancel === undefined) return
    const resumeWins = resume.status === 200 && resume.body?.data?.status === "completed"
    const cancelWins = cancel.status === 200
    const outcome = `${id}: resume ${resume.status} ${
      JSON.stringify(resume.body?.data?.status ?? resume.body?.error)
    }, cancel ${cancel.status} ${JSON.stringify(cancel.body?.data?.status ?? cancel.body?.error)}`
    if (resumeWins && cancelWins) violations.add("race: two winners", outcome)
    else if (!resumeWins && !cancelWins) violations.add("race: no winner", outcome)
    else if (resumeWins) resumeWon++
    else cancelWon++
    const resumeLost = resume.status === 404 || (resume.status === 200 && resume.body?.data?.status === "cancelled")
    if (cancelWins && !resumeLost && resume.status < 500) violations.add("race: unexpected resume answer", outcome)
    if (resumeWins && cancel.status !== 400 && cancel.status < 500) {
      violations.add("race: unexpected cancel answer", outcome)
    }
    const state = await server.request("GET", `${path}/state`)
    const expected = resumeWins ? "completed" : cancelWins ? "cancelled" : undefined
    if (expected !== undefined && state?.body?.data?.status !== expected) {
      violations.add(
        "race: state is not the winner's",
        `${outcome}; state ${JSON.stringify(state?.body?.data?.status)}`
      )
    }
  }
  const worker = async () => {
    while (next < trials) await trial(`race-${process.pid}-${next++}`)
  }
  if (trials > 0) log(`races: ${trials} trials of resume against cancel`)
  await Promise.all(Array.from({ length: Math.min(4, trials) }, worker))
  return { ids, resumeWon, cancelWon }
}

/** A database URL without its password, for logs. */
export const redact = (url: string) => url.replace(/\/\/([^:/@]+):[^@/]*@/, "//$1:***@")
