/**
 * Chaos: workflow load (the example workflows, the recorded chaos workflows and the tick schedule of
 * scripts/chaos-main.mjs) while the service is SIGKILLed and restarted on the same database (and, on
 * Postgres, its connections reset), races of resume against cancel, then the invariants. Exits 1 on
 * any violation.
 * Usage: npm run chaos [-- --seconds 60 --kills 10 --resets 5 --clients 6 --races 1000 --store sqlite|postgres --postgres URL --instances 3]
 * `--instances N` (Postgres; default 1): N service processes share the database; requests and kills go to random ones.
 * `--resets N` (Postgres; default 0): `pg_terminate_backend` of every connection to the database N
 * times during the load; then an execution in error is a violation (as a 500 always is).
 * `--postgres URL` (implies `--store postgres`) is the server to create a fresh database on (dropped at
 * the end); by default postgres://postgres@127.0.0.1:5432/postgres.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { redact, runChaos } from "./support/chaos.js"
import { createPostgresDatabase, DEFAULT_POSTGRES_ADMIN_URL } from "./support/database.js"

const { values } = parseArgs({
  options: {
    seconds: { type: "string" },
    kills: { type: "string" },
    resets: { type: "string" },
    clients: { type: "string" },
    races: { type: "string" },
    store: { type: "string" },
    postgres: { type: "string" },
    instances: { type: "string" },
    help: { type: "boolean" }
  }
})

if (values.help) {
  console.log(`npm run chaos [-- options]
  --seconds N     load time with the service up (60)
  --kills N       SIGKILLs during the load (one per 6 s)
  --clients N     concurrent client loops (6)
  --races N       resume-against-cancel trials after the load (1000)
  --store S       sqlite (a temporary file) or postgres (a fresh database, dropped at the end)
  --postgres URL  the Postgres server to create it on (implies --store postgres)
  --instances N   Postgres: service processes sharing the database (1)
  --resets N      Postgres: resets of every connection during the load (0)
The service is scripts/chaos-main.mjs: the built example app plus chaos workflows that record each step's start.`)
  process.exit(0)
}

const count = (name: string, value: string | undefined, fallback: number) => {
  const parsed = Number(value ?? fallback)
  if (!Number.isInteger(parsed) || parsed < 0) {
    console.error(`--${name} must be a whole number, got ${value}`)
    process.exit(2)
  }
  return parsed
}

const seconds = Math.max(1, count("seconds", values.seconds, 60))
const kills = count("kills", values.kills, Math.max(1, Math.floor(seconds / 6)))
const clients = Math.max(1, count("clients", values.clients, 6))
const races = count("races", values.races, 1000)
const resets = count("resets", values.resets, 0)
const store = values.postgres !== undefined ? "postgres" : values.store ?? "sqlite"
if (store !== "sqlite" && store !== "postgres") {
  console.error(`--store must be sqlite or postgres, got ${store}`)
  process.exit(2)
}
const instances = Math.max(1, count("instances", values.instances, 1))
if (instances > 1 && store !== "postgres") {
  console.error("--instances needs --store postgres (SQLite is one process's)")
  process.exit(2)
}
if (resets > 0 && store !== "postgres") {
  console.error("--resets needs --store postgres (connection resets are Postgres's)")
  process.exit(2)
}

const database = async () => {
  if (store === "postgres") return createPostgresDatabase(values.postgres ?? DEFAULT_POSTGRES_ADMIN_URL)
  const dir = mkdtempSync(join(tmpdir(), "chaos-"))
  return { url: `file:${join(dir, "chaos.db")}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
}

const main = async () => {
  const { url, drop } = await database()
  const startedAt = Date.now()
  try {
    const report = await runChaos({
      databaseUrl: url,
      seconds,
      kills,
      resets,
      clients,
      races,
      instances,
      log: (line) => console.log(`[chaos ${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${line}`)
    })
    console.log(`\nchaos on ${store} (${redact(url)}), ${instances} instance${instances === 1 ? "" : "s"}`)
    console.table([{
      seconds,
      kills: report.kills,
      resets: report.resets,
      requests: report.requests,
      "cut by a kill": report.interrupted,
      "executions created": report.created,
      "executions checked": report.executionsChecked,
      "recorded: executions / starts": `${report.recorded.executions} / ${report.recorded.starts}`,
      "schedule fired (each second, none missed)": report.ticks,
      "queued: answered / most at once": `${report.queue.answeredQueued} / ${report.queue.mostAtOnce}`,
      races: report.races.trials,
      "resume won": report.races.resumeWon,
      "cancel won": report.races.cancelWon
    }])
    if (report.violations.length === 0) {
      console.log("no violations")
      return 0
    }
    console.log(`VIOLATIONS (${report.violations.reduce((sum, v) => sum + v.count, 0)}):`)
    for (const { kind, count, example } of report.violations) {
      console.log(`- ${kind}: ${count}\n    e.g. ${example.replace(/\n/g, "\n    ")}`)
    }
    return 1
  } finally {
    await drop()
  }
}

process.exitCode = await main()
