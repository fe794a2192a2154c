/**
 * Issue #10's table in one run, over loopback only: `node dist/main.js` with its default configuration
 * (tracing on, nothing sampled) on temporary SQLite files, its agents pointed at the fake model over
 * HTTP, beside raw node:http and a minimal Effect HttpApi app, each in its own process; and row 9
 * (issue #11): one and three instances on a fresh database of the local Postgres.
 *
 *   npm run bench [-- --seconds 10 --runs 3 --only 1,2,7 --json results.json]
 *   npm run bench -- --against <commit-ish | reference> [--pairs 3]   (or --against-reference)
 *   npm run bench -- --peer voltagent [--only 1,2,3,4,5]   (rows 1 to 5 against a peer framework's server)
 *   npm run bench -- --beside voltagent [--pairs 3]         (ours and the peer in turns; issue #44's targets)
 *
 * With --against, the reference commit's build (.bench/ref-<sha>, made once) and the working tree's take
 * turns, a fresh run each, and every row's primary cell is compared pair by pair (scripts/bench/against.ts);
 * the exit code is 1 when a row is behind. With --peer, rows 1 to 5 load a peer framework's server
 * (scripts/bench/peer.ts: its own package folder under bench/, installed on first use) in place of ours;
 * with --beside, ours and the peer's take turns and issue #44's targets are judged (scripts/bench/beside.ts).
 *
 * Every loop is bounded in count and time; child processes and temporary directories are removed on
 * exit, even on error. What each row measures: docs/benchmarks.md, "Bench".
 */
import { writeFileSync } from "node:fs"
import { join, relative } from "node:path"
import { parseArgs } from "node:util"
import { anyBehind, compareRows, formatComparison, PAIR_FLOOR, pairOrder, PASS_MEDIAN } from "./bench/against.js"
import { type BesidePair, compareBeside, formatBeside, formatPeerTable } from "./bench/beside.js"
import { describeEnvironment, type Environment } from "./bench/environment.js"
import { type BenchOptions, type Lab, makeLab, printableOptions } from "./bench/lab.js"
import {
  ensureInstalled,
  installedVersions,
  makePeerLab,
  type Peer,
  PEER_ROWS,
  peerName,
  peerNamed
} from "./bench/peer.js"
import { HEAD_MAIN, installCleanup, REPO_ROOT, temporaryDirectory } from "./bench/processes.js"
import { defaultReference, referenceBuild, resolveCommit } from "./bench/reference.js"
import { forEachRow, sleepersRow } from "./bench/rows-durable.js"
import { featuresRow } from "./bench/rows-features.js"
import { getAgentsRow, pipelineRow, streamFirstDeltaRow, textLatencyRow, textThroughputRow } from "./bench/rows-http.js"
import { agentStreamsRow, reattachRow, suspendedRow } from "./bench/rows-memory.js"
import { scaleOutRow } from "./bench/rows-scale.js"
import { listingRow, seededFile, startupRow } from "./bench/rows-service.js"
import { type Durability, readDurability } from "./bench/store.js"
import { formatTable, medianOfRuns, type RowId, type RowResult, selectRows } from "./bench/table.js"
import { DEFAULT_POSTGRES_ADMIN_URL } from "./support/database.js"

const { values } = parseArgs({
  options: {
    seconds: { type: "string" },
    runs: { type: "string" },
    only: { type: "string" },
    json: { type: "string" },
    connections: { type: "string" },
    stored: { type: "string" },
    suspended: { type: "string" },
    "reattach-executions": { type: "string" },
    "streams-per-execution": { type: "string" },
    "agent-streams": { type: "string" },
    startups: { type: "string" },
    sleepers: { type: "string" },
    postgres: { type: "string" },
    against: { type: "string" },
    "against-reference": { type: "boolean" },
    pairs: { type: "string" },
    peer: { type: "string" },
    beside: { type: "string" }
  }
})

const positive = (name: string, value: string | undefined, fallback: number, max: number) => {
  const parsed = value === undefined ? fallback : Number(value)
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > max) throw new Error(`--${name}: an integer from 1 to ${max}`)
  return parsed
}

const options: BenchOptions = {
  seconds: positive("seconds", values.seconds, 10, 600),
  connections: positive("connections", values.connections, 50, 1_000),
  storedExecutions: positive("stored", values.stored, 100_000, 1_000_000),
  suspendedExecutions: positive("suspended", values.suspended, 100_000, 1_000_000),
  reattachExecutions: positive("reattach-executions", values["reattach-executions"], 1_000, 10_000),
  streamsPerExecution: positive("streams-per-execution", values["streams-per-execution"], 10, 100),
  agentStreams: positive("agent-streams", values["agent-streams"], 2_000, 8_000),
  startups: positive("startups", values.startups, 10, 100),
  sleepers: positive("sleepers", values.sleepers, 10_000, 100_000),
  postgresUrl: values.postgres ?? DEFAULT_POSTGRES_ADMIN_URL
}
const runs = positive("runs", values.runs, 1, 10)
if (values.against !== undefined && values["against-reference"] === true) {
  throw new Error("--against and --against-reference: one or the other")
}
const against = values["against-reference"] === true || values.against === "reference"
  ? defaultReference()
  : values.against
if (values.peer !== undefined && values.beside !== undefined) throw new Error("--peer and --beside: one or the other")
const peerId = values.peer ?? values.beside
const peer = peerId === undefined ? undefined : peerNamed(peerId)
if (peer !== undefined && against !== undefined) throw new Error("--peer and --beside: not with --against")
const paired = against !== undefined || values.beside !== undefined
if (!paired && values.pairs !== undefined) throw new Error("--pairs: only with --against or --beside")
if (paired && values.runs !== undefined) throw new Error("--runs: not with --against or --beside (--pairs instead)")
const pairs = positive("pairs", values.pairs, 3, 10)
if (against !== undefined && pairs < 3) throw new Error("--pairs: at least 3 (the rule is over at least three pairs)")
const rows = peer === undefined ? selectRows(values.only) : selectRows(values.only ?? PEER_ROWS.join(","))
const notPeerRows = rows.filter((id) => !PEER_ROWS.some((peerRow) => peerRow === id))
if (peer !== undefined && notPeerRows.length > 0) {
  const only = PEER_ROWS.join(", ")
  throw new Error(`--peer and --beside run rows ${only} only; row ${notPeerRows.join(", ")} measures our service alone`)
}
if (options.reattachExecutions * options.streamsPerExecution > 15_000) {
  throw new Error("row 7a: at most 15,000 streams (one socket each; the machine allows 20,000 open files per process)")
}

const RUNNERS: Readonly<Record<RowId, (lab: Lab) => Promise<RowResult>>> = {
  "1": getAgentsRow,
  "2": textLatencyRow,
  "3": textThroughputRow,
  "4": streamFirstDeltaRow,
  "5": pipelineRow,
  "6": listingRow,
  "7a": reattachRow,
  "7b": agentStreamsRow,
  "7c": suspendedRow,
  "8": startupRow,
  "9": scaleOutRow,
  "10": sleepersRow,
  "11": forEachRow,
  "12": featuresRow
}

const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`)

/** One run of the selected rows in a new lab; a row that fails is reported as such and the run goes on. */
const runOnce = async (
  run: string,
  newLab: () => Lab
): Promise<{ readonly results: Array<RowResult>; readonly databaseFile?: string }> => {
  const lab = newLab()
  const results: Array<RowResult> = []
  try {
    for (const id of rows) {
      log(`run ${run}: row ${id}`)
      const started = Date.now()
      const result = await RUNNERS[id](lab).catch((error: unknown): RowResult => ({
        id,
        cells: {},
        notes: [`failed: ${error instanceof Error ? error.message.slice(0, 500) : String(error)}`]
      }))
      results.push(result)
      log(
        `run ${run}: row ${id} done in ${((Date.now() - started) / 1000).toFixed(1)} s: ${JSON.stringify(result.cells)}`
      )
    }
  } finally {
    await lab.close()
  }
  return { results, databaseFile: await lab.serviceDatabase() }
}

const durabilityOf = async (databaseFile: string | undefined): Promise<Durability> =>
  readDurability(
    databaseFile ?? (await seededFile()) ?? join(temporaryDirectory("bench-durability-"), "fresh.db"),
    options.postgresUrl
  )

const header = (environment: Environment, durability: Durability, what: string) => [
  "",
  `${what}, ${environment.date}, commit ${environment.commit}`,
  `Machine: ${environment.cpu}, ${environment.cores} cores, ${environment.memoryGiB} GiB, Node ${environment.node}, open files ${environment.openFilesLimit}`,
  `Durability: SQLite journal_mode ${durability.sqliteJournalMode}, synchronous ${durability.sqliteSynchronous} ` +
  `(as the service's own SQL layer opens it); Postgres synchronous_commit ${durability.postgresSynchronousCommit}`,
  `Load: autocannon, ${options.connections} connections, ${options.seconds} s per throughput measurement (after a warm-up), loopback` +
  (rows.includes("9") ? "; row 9 splits the connections over its instances, one autocannon each, all at once" : ""),
  ""
]

const writeJson = (file: string, contents: unknown) => {
  writeFileSync(file, JSON.stringify(contents, null, 2))
  log(`results written to ${file}`)
}

const plain = async () => {
  const environment = describeEnvironment()
  log(`rows ${rows.join(", ")}; ${runs} run(s); ${JSON.stringify(printableOptions(options))}`)
  const allRuns: Array<Array<RowResult>> = []
  let databaseFile: string | undefined
  for (let run = 1; run <= runs; run++) {
    const outcome = await runOnce(`run ${run}`, () => makeLab(options, HEAD_MAIN))
    allRuns.push(outcome.results)
    databaseFile ??= outcome.databaseFile
    if (runs > 1) console.log(`\nRun ${run}:\n\n${formatTable(outcome.results)}\n`)
  }
  const durability = await durabilityOf(databaseFile)
  const final = medianOfRuns(allRuns)
  console.log(
    [...header(environment, durability, runs > 1 ? `Median of ${runs} runs` : "One run"), formatTable(final), ""].join(
      "\n"
    )
  )
  if (values.json !== undefined) {
    writeJson(values.json, {
      environment,
      durability,
      options: printableOptions(options),
      runs: allRuns,
      median: final
    })
  }
}

/** Pairs of runs, the reference's build and the working tree's taking turns to go first; exit code 1 when a row is behind. */
const compared = async (ref: string) => {
  const sha = resolveCommit(ref)
  const environment = describeEnvironment()
  log(`against ${ref} (${sha}); rows ${rows.join(", ")}; ${pairs} pairs; ${JSON.stringify(printableOptions(options))}`)
  const mains = { ref: await referenceBuild(sha, log), head: HEAD_MAIN }
  const done: Array<{ readonly order: ReadonlyArray<string>; ref: Array<RowResult>; head: Array<RowResult> }> = []
  let databaseFile: string | undefined
  for (let pair = 1; pair <= pairs; pair++) {
    const order = pairOrder(pair)
    const results = { order, ref: [] as Array<RowResult>, head: [] as Array<RowResult> }
    for (const side of order) {
      const outcome = await runOnce(`pair ${pair} ${side}`, () => makeLab(options, mains[side]))
      results[side] = outcome.results
      if (side === "head") databaseFile ??= outcome.databaseFile
    }
    done.push(results)
  }
  const durability = await durabilityOf(databaseFile)
  const median = { ref: medianOfRuns(done.map((pair) => pair.ref)), head: medianOfRuns(done.map((pair) => pair.head)) }
  const comparison = compareRows(rows, done)
  const short = sha.slice(0, 12)
  console.log([
    ...header(
      environment,
      durability,
      `Against ${short} (${ref}): ${pairs} alternating pairs, reference first in odd ones`
    ),
    `Reference ${short}, median of ${pairs} runs:`,
    "",
    formatTable(median.ref),
    "",
    `Working tree, median of ${pairs} runs:`,
    "",
    formatTable(median.head),
    "",
    `Against the reference (ratio > 1: the working tree did better; a row passes with a median ratio ≥ ${PASS_MEDIAN} ` +
    `and no pair below ${PAIR_FLOOR.toFixed(2)}):`,
    "",
    formatComparison(comparison),
    ""
  ].join("\n"))
  if (values.json !== undefined) {
    writeJson(values.json, {
      environment,
      durability,
      options: printableOptions(options),
      against: { ref, sha, pairs },
      pairs: done,
      median,
      comparison
    })
  }
  process.exitCode = anyBehind(comparison) ? 1 : 0
}

/** The peer's side of a table: its packages and what it keeps where. */
const peerLines = (chosen: Peer) => {
  const server = join(relative(REPO_ROOT, chosen.folder), "server.mjs")
  return [
    `${peerName(chosen)}: ${installedVersions(chosen).join(", ")}; ${server} on its own HTTP server, agent ` +
    "memory and workflow executions in memory (its defaults; ours writes them to SQLite)",
    ""
  ]
}

/** Rows 1 to 5 against the peer's server alone, titled by the peer. */
const peerAlone = async (chosen: Peer) => {
  ensureInstalled(chosen, log)
  const name = peerName(chosen)
  const environment = describeEnvironment()
  log(`${name}: rows ${rows.join(", ")}; ${runs} run(s); ${JSON.stringify(printableOptions(options))}`)
  const allRuns: Array<Array<RowResult>> = []
  for (let run = 1; run <= runs; run++) {
    const outcome = await runOnce(`${chosen.id} run ${run}`, () => makePeerLab(options, chosen))
    allRuns.push(outcome.results)
    if (runs > 1) console.log(`\nRun ${run}:\n\n${formatPeerTable(outcome.results, name)}\n`)
  }
  const final = medianOfRuns(allRuns)
  const what = runs > 1 ? `median of ${runs} runs` : "one run"
  console.log([
    "",
    `${name}, ${what}, ${environment.date}, bench of commit ${environment.commit}`,
    `Machine: ${environment.cpu}, ${environment.cores} cores, ${environment.memoryGiB} GiB, Node ${environment.node}`,
    `Load: autocannon, ${options.connections} connections, ${options.seconds} s per throughput measurement (after a warm-up), loopback`,
    ...peerLines(chosen),
    formatPeerTable(final, name),
    ""
  ].join("\n"))
  if (values.json !== undefined) {
    writeJson(values.json, {
      environment,
      peer: installedVersions(chosen),
      options: printableOptions(options),
      runs: allRuns,
      median: final
    })
  }
}

/** Ours and the peer's in alternating pairs (ours first in odd ones); both tables and issue #44's targets. */
const besideSitting = async (chosen: Peer) => {
  ensureInstalled(chosen, log)
  const name = peerName(chosen)
  const environment = describeEnvironment()
  log(`beside ${name}; rows ${rows.join(", ")}; ${pairs} pair(s); ${JSON.stringify(printableOptions(options))}`)
  const labs = { ours: () => makeLab(options, HEAD_MAIN), peer: () => makePeerLab(options, chosen) }
  const done: Array<BesidePair & { readonly order: ReadonlyArray<string> }> = []
  let databaseFile: string | undefined
  for (let pair = 1; pair <= pairs; pair++) {
    const order = pair % 2 === 1 ? (["ours", "peer"] as const) : (["peer", "ours"] as const)
    const results = { order, ours: [] as Array<RowResult>, peer: [] as Array<RowResult> }
    for (const side of order) {
      const outcome = await runOnce(`pair ${pair} ${side}`, labs[side])
      results[side] = outcome.results
      if (side === "ours") databaseFile ??= outcome.databaseFile
    }
    done.push(results)
  }
  const durability = await durabilityOf(databaseFile)
  const median = {
    ours: medianOfRuns(done.map((pair) => pair.ours)),
    peer: medianOfRuns(done.map((pair) => pair.peer))
  }
  const comparison = compareBeside(rows, done)
  const of = pairs > 1 ? `median of ${pairs} runs` : "one run"
  console.log([
    ...header(environment, durability, `Beside ${name}: ${pairs} alternating pair(s), ours first in odd ones`),
    ...peerLines(chosen),
    `Ours, ${of}:`,
    "",
    formatTable(median.ours),
    "",
    `${name}, ${of}:`,
    "",
    formatPeerTable(median.peer, name),
    "",
    `Issue #44's targets, on the medians over the pairs ("bar": what ours is held to; "pairs met": the same rule pair by pair):`,
    "",
    formatBeside(comparison, name),
    ""
  ].join("\n"))
  if (values.json !== undefined) {
    writeJson(values.json, {
      environment,
      durability,
      peer: installedVersions(chosen),
      options: printableOptions(options),
      pairs: done,
      median,
      comparison
    })
  }
}

installCleanup()
await (peer !== undefined
  ? values.beside !== undefined ? besideSitting(peer) : peerAlone(peer)
  : against === undefined
  ? plain()
  : compared(against))
