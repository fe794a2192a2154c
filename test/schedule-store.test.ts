import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Context, Cron, Effect, Either, Layer, Option } from "effect"
import { join } from "node:path"
import { DatabaseLive } from "../src/Database.js"
import { firing, parseCron } from "../src/workflows/schedules/ScheduleCron.js"
import { firedExecutionId } from "../src/workflows/schedules/ScheduleFiring.js"
import { type Schedule, ScheduleStore, ScheduleStoreLive } from "../src/workflows/schedules/ScheduleStore.js"
import { testEvent, testExecution } from "./support/executions.js"
import { freshPostgresDatabase, postgresAvailable } from "./support/postgres.js"
import { tempDir } from "./support/TestServer.js"

/**
 * Workflow schedules (issue #33): cron parsing and catch-up, and the firing's one transaction (the
 * conditional UPDATE of the schedule with the INSERT of `sched:<id>:<t>`) raced by two instances, and
 * against a pause, on SQLite and Postgres.
 */

const MINUTE = 60_000
const cronOf = (expr: string, tz?: string) => Either.getOrThrow(parseCron(expr, tz, MINUTE))

describe("schedule cron", () => {
  it("refuses a bad cron, an unknown time zone, a seconds field, and a cron faster than the minimum interval, naming it", () => {
    expect(parseCron("61 * * * *", undefined, MINUTE)).toEqual(
      Either.left(expect.stringContaining(`cron "61 * * * *" is invalid`))
    )
    expect(parseCron("* * * * *", "Mars/Olympus", MINUTE)).toEqual(
      Either.left(`timezone "Mars/Olympus" is not a known IANA time zone`)
    )
    expect(parseCron("*/5 * * * * *", undefined, MINUTE)).toEqual(
      Either.left(expect.stringContaining("must have 5 fields"))
    )
    expect(parseCron("* * *", undefined, MINUTE)).toEqual(Either.left(expect.stringContaining("it has 3")))
    // A seconds field only under a lowered minimum interval (the test setting), and never faster than it.
    expect(Either.isRight(parseCron("*/2 * * * * *", undefined, 1000))).toBe(true)
    expect(parseCron("* * * * * *", undefined, 2000)).toEqual(Either.left(expect.stringContaining("minimum interval")))
    expect(Either.isRight(parseCron("* * * * *", "Europe/Berlin", MINUTE))).toBe(true)
  })

  it("a DST gap fires once, an hour later by the wall clock; a DST overlap fires once, at the first of the two", () => {
    const daily = cronOf("30 2 * * *", "Europe/Berlin")
    // 2026-03-29: 02:00 → 03:00 in Berlin; 02:30 does not exist, the firing is at 03:30 CEST (01:30Z).
    expect(Cron.next(daily, new Date("2026-03-29T00:00:00Z")).toISOString()).toBe("2026-03-29T01:30:00.000Z")
    expect(Cron.next(daily, new Date("2026-03-29T01:30:00Z")).toISOString()).toBe("2026-03-30T00:30:00.000Z")
    // 2026-10-25: 03:00 → 02:00; 02:30 happens twice (00:30Z CEST, 01:30Z CET): fired at the first only.
    expect(Cron.next(daily, new Date("2026-10-25T00:00:00Z")).toISOString()).toBe("2026-10-25T00:30:00.000Z")
    expect(Cron.next(daily, new Date("2026-10-25T00:30:00Z")).toISOString()).toBe("2026-10-26T01:30:00.000Z")
  })

  it("catch-up: none skips missed times, latest fires the last, all fires each in turn, at most the last 100", () => {
    const everyMinute = cronOf("* * * * *")
    const due = Date.parse("2026-01-01T00:00:00Z")
    // On time: fires its time, next one minute on.
    expect(firing(everyMinute, "none", due, due + 10)).toEqual({ fire: due, next: due + MINUTE })
    const later = due + 10 * MINUTE + 5_000
    expect(firing(everyMinute, "none", due, later)).toEqual({ fire: undefined, next: due + 11 * MINUTE })
    expect(firing(everyMinute, "latest", due, later)).toEqual({ fire: due + 10 * MINUTE, next: due + 11 * MINUTE })
    expect(firing(everyMinute, "all", due, later)).toEqual({ fire: due, next: due + MINUTE })
    const muchLater = due + 500 * MINUTE
    expect(firing(everyMinute, "all", due, muchLater)).toEqual({ fire: due + 401 * MINUTE, next: due + 402 * MINUTE })
  })
})

const backends = [
  { name: "SQLite", skip: false, url: Effect.map(tempDir, (dir) => `file:${join(dir, "schedules.db")}`) },
  { name: "Postgres", skip: !postgresAvailable, url: freshPostgresDatabase }
] as const

/** One instance's store: its own client (and connections) on the database. */
const instanceOn = (url: string) =>
  Effect.map(Layer.build(ScheduleStoreLive.pipe(Layer.provideMerge(DatabaseLive(url)))), (context) => ({
    store: Context.get(context, ScheduleStore),
    sql: Context.get(context, SqlClient.SqlClient)
  }))

const scheduleRow = (id: string, due: string): Schedule => ({
  id,
  workflowId: "w",
  name: id,
  source: "api",
  ownerKey: "",
  userId: null,
  cron: "* * * * *",
  timezone: null,
  input: {},
  catchUp: "none",
  paused: false,
  nextFireAt: due,
  lastFiredAt: null,
  lastExecutionId: null,
  failures: 0,
  lastError: null,
  createdAt: due,
  updatedAt: due
})

const TRIALS = 200
const BOUND_TRIALS = 100

for (const backend of backends) {
  describe.skipIf(backend.skip)(`schedule firing on ${backend.name}`, () => {
    it.scoped(
      `two instances fire the same due time: exactly one execution, exactly one winner (${TRIALS} trials)`,
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const a = yield* instanceOn(url)
          const b = yield* instanceOn(url)
          for (let trial = 0; trial < TRIALS; trial++) {
            const id = `race-${trial}`
            const due = new Date(Date.parse("2026-01-01T00:00:00Z") + trial * MINUTE).toISOString()
            const next = new Date(Date.parse(due) + MINUTE).toISOString()
            expect(yield* a.store.insert(scheduleRow(id, due), TRIALS)).toBe("inserted")
            // The instances may not agree on the time fired for (catchUp "latest" reads each one's clock):
            // the conditional UPDATE of the due time, not the execution's id, makes the firing one.
            const fireOn = (store: ScheduleStore["Type"], owner: string, at: string) => {
              const executionId = firedExecutionId(id, at)
              return store.fire({ id, due, next, at }, testExecution(executionId, { owner }), [
                testEvent(executionId, "workflow-start")
              ])
            }
            const later = new Date(Date.parse(due) + 1).toISOString()
            const [x, y] = yield* Effect.all([fireOn(a.store, "a", due), fireOn(b.store, "b", later)], {
              concurrency: 2
            })
            expect([x, y].filter(Option.isSome)).toHaveLength(1)
            const executionId = firedExecutionId(id, Option.isSome(x) ? due : later)
            const rows = yield* a.sql<
              { id: string }
            >`SELECT id FROM workflow_executions WHERE id LIKE ${`sched:${id}:%`}`
            expect(rows.map((row) => row.id)).toEqual([executionId])
            const events = yield* a.sql<
              { n: number | string }
            >`SELECT COUNT(*) AS n FROM workflow_events WHERE execution_id = ${executionId}`
            expect(Number(events[0].n)).toBe(1)
            const schedule = Option.getOrThrow(yield* a.store.get(id))
            expect(schedule).toMatchObject({ nextFireAt: next, lastExecutionId: executionId })
          }
        }),
      120_000
    )

    it.scoped(
      `a firing raced by a pause: either it fired before the pause, or nothing fired (${TRIALS} trials)`,
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const a = yield* instanceOn(url)
          const b = yield* instanceOn(url)
          let fired = 0
          for (let trial = 0; trial < TRIALS; trial++) {
            const id = `pause-${trial}`
            const due = "2026-01-01T00:00:00.000Z"
            const next = "2026-01-01T00:01:00.000Z"
            yield* a.store.insert(scheduleRow(id, due), TRIALS)
            const executionId = firedExecutionId(id, due)
            const [shot, paused] = yield* Effect.all([
              a.store.fire({ id, due, next, at: due }, testExecution(executionId, { owner: "a" }), [
                testEvent(executionId, "workflow-start")
              ]),
              b.store.setPaused(id, true, due)
            ], { concurrency: 2 })
            expect(Option.isSome(paused)).toBe(true)
            // The pause came first (its row still due at `due`): then nothing fired.
            if (Option.getOrThrow(paused).nextFireAt === due) expect(Option.isNone(shot)).toBe(true)
            const rows = yield* a.sql<{ id: string }>`SELECT id FROM workflow_executions WHERE id = ${executionId}`
            expect(rows.length).toBe(Option.isSome(shot) ? 1 : 0)
            const schedule = Option.getOrThrow(yield* a.store.get(id))
            expect(schedule.paused).toBe(true)
            expect(schedule.nextFireAt).toBe(Option.isSome(shot) ? next : due)
            if (Option.isSome(shot)) fired++
          }
          yield* Effect.logInfo(`fired before the pause in ${fired} of ${TRIALS} trials`)
        }),
      120_000
    )

    it.scoped(
      `the per-owner bound holds under inserts raced by two instances (${BOUND_TRIALS} trials)`,
      () =>
        Effect.gen(function*() {
          const url = yield* backend.url
          const a = yield* instanceOn(url)
          const b = yield* instanceOn(url)
          for (let trial = 0; trial < BOUND_TRIALS; trial++) {
            const owner = `owner-${trial}`
            const row = (name: string) => ({
              ...scheduleRow(`${owner}-${name}`, "2026-01-01T00:00:00.000Z"),
              ownerKey: owner
            })
            expect(yield* a.store.insert(row("first"), 3)).toBe("inserted")
            // Six more race for the two places left; a taken name stays "taken", never "full".
            const outcomes = yield* Effect.all(
              Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a : b).store.insert(row(`racer-${i}`), 3)),
              { concurrency: "unbounded" }
            )
            expect(outcomes.filter((outcome) => outcome === "inserted")).toHaveLength(2)
            expect(outcomes.filter((outcome) => outcome === "full")).toHaveLength(4)
            const owned = yield* a.sql<
              { n: number | string }
            >`SELECT COUNT(*) AS n FROM workflow_schedules WHERE owner_key = ${owner}`
            expect(Number(owned[0].n)).toBe(3)
            expect(yield* b.store.insert(row("first"), 3)).toBe("taken")
          }
        }),
      120_000
    )

    it.scoped("a code schedule upserted at start-up keeps its due time while its cron and time zone are unchanged, else takes the new one", () =>
      Effect.gen(function*() {
        const { store } = yield* instanceOn(yield* backend.url)
        const code = {
          ...scheduleRow("code.w.nightly", "2026-01-01T03:00:00.000Z"),
          source: "code" as const,
          ownerKey: "system",
          cron: "0 3 * * *"
        }
        yield* store.upsertCode(code)
        // Another instance starting later computes another next time from its clock: the stored one stays.
        yield* store.upsertCode({ ...code, nextFireAt: "2026-01-02T03:00:00.000Z", input: { v: 2 } })
        expect(Option.getOrThrow(yield* store.get(code.id))).toMatchObject({
          nextFireAt: "2026-01-01T03:00:00.000Z",
          input: { v: 2 }
        })
        // A deploy that changes the cron (or the time zone): its next time.
        yield* store.upsertCode({ ...code, cron: "0 4 * * *", nextFireAt: "2026-01-01T04:00:00.000Z" })
        expect(Option.getOrThrow(yield* store.get(code.id))).toMatchObject({
          cron: "0 4 * * *",
          nextFireAt: "2026-01-01T04:00:00.000Z"
        })
        yield* store.upsertCode({
          ...code,
          cron: "0 4 * * *",
          timezone: "Europe/Berlin",
          nextFireAt: "2026-01-01T03:00:00.000Z"
        })
        expect(Option.getOrThrow(yield* store.get(code.id))).toMatchObject({
          timezone: "Europe/Berlin",
          nextFireAt: "2026-01-01T03:00:00.000Z"
        })
        // Removing an API schedule leaves a code schedule of the same id alone.
        expect(yield* store.remove(code.id, "api")).toBe(false)
      }))

    it.scoped("a failed firing is recorded on the schedule, which pauses itself after 5 in a row", () =>
      Effect.gen(function*() {
        const { store } = yield* instanceOn(yield* backend.url)
        yield* store.insert(scheduleRow("failing", "2026-01-01T00:00:00.000Z"), 1)
        for (let i = 0; i < 5; i++) {
          const due = new Date(Date.parse("2026-01-01T00:00:00Z") + i * MINUTE).toISOString()
          const next = new Date(Date.parse(due) + MINUTE).toISOString()
          expect(yield* store.skip({ id: "failing", due, next }, `bad input ${i}`)).toBe(true)
          const schedule = Option.getOrThrow(yield* store.get("failing"))
          expect(schedule).toMatchObject({ failures: i + 1, lastError: `bad input ${i}`, paused: i === 4 })
        }
        // Paused: nothing more moves it.
        expect(yield* store.skip({ id: "failing", due: "2026-01-01T00:05:00.000Z", next: "x" })).toBe(false)
      }))
  })
}
