import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type ChaosOptions, runChaos } from "../scripts/support/chaos.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"

/**
 * The bounded form of `npm run chaos`: a short load with two SIGKILLs, then 20 resume/cancel races, on
 * scripts/chaos-main.mjs (the built example app and the chaos workflows that record their starts).
 */
const BOUNDED: Omit<ChaosOptions, "databaseUrl"> = { seconds: 8, kills: 2, clients: 4, races: 20 }

const expectNoViolations = async (databaseUrl: string, options: Partial<ChaosOptions> = {}) => {
  const report = await runChaos({ ...BOUNDED, ...options, databaseUrl })
  // First, so a failure prints what was seen (a limit exceeded shows there with its executions too).
  expect(report.violations).toEqual([])
  expect(report.kills).toBe(options.kills ?? 2)
  expect(report.resets).toBe(options.resets ?? 0)
  expect(report.created).toBeGreaterThan(20)
  expect(report.executionsChecked).toBeGreaterThanOrEqual(report.created)
  // The recorded oracle ran: the chaos workflows' starts were checked against the committed events.
  expect(report.recorded.starts).toBeGreaterThan(50)
  // Issue #33: the schedule of each second fired through the kills (one execution a time, none missed).
  expect(report.ticks).toBeGreaterThanOrEqual((options.seconds ?? BOUNDED.seconds) - 1)
  // And the limited workflow queued starts and ran them, never more than two of a group at once.
  expect(report.queue.answeredQueued).toBeGreaterThan(0)
  expect(report.queue.spans).toBeGreaterThan(5)
  expect(report.queue.mostAtOnce).toBeLessThanOrEqual(2)
}

describe("chaos: SIGKILL under workflow load, restart on the same database", () => {
  it(
    "SQLite: nothing lost, nothing left running, suspended ones resume, events numbered 1..n and none after a final one",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "chaos-test-"))
      try {
        await expectNoViolations(`file:${join(dir, "chaos.db")}`)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
    120_000
  )

  it.scoped.skipIf(!postgresAvailable)(
    "Postgres: the same invariants",
    () => Effect.flatMap(freshPostgresDatabase, (databaseUrl) => Effect.promise(() => expectNoViolations(databaseUrl))),
    120_000
  )
})

describe("chaos: Postgres connection resets under workflow load (issue #27 item 3)", () => {
  it.scoped.skipIf(!postgresAvailable)(
    "five resets, no kill: no 500, no execution in error, and the same invariants",
    () =>
      Effect.flatMap(
        freshPostgresDatabase,
        (databaseUrl) => Effect.promise(() => expectNoViolations(databaseUrl, { kills: 0, resets: 5 }))
      ),
    120_000
  )
})
