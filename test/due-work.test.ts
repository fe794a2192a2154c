import { SqliteClient } from "@effect/sql-sqlite-node"
import { expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { makeDueWork } from "../src/scheduling/DueWork.js"

/**
 * The due-work scheduler (issue #31, settled 19) with a kind of a test's own: one timer, re-armed by
 * `parked` when a sooner item is stored; the poll (here a minute) is only a backstop.
 */

const inMemoryKind = (name: string, leadMs = 0) => {
  const items = new Map<string, number>()
  const handled: Array<{ readonly key: string; readonly dueAt: number; readonly at: number }> = []
  return {
    items,
    handled,
    kind: {
      name,
      leadMs,
      nextDue: Effect.sync(() => (items.size === 0 ? Option.none() : Option.some(Math.min(...items.values())))),
      claimDue: (limit: number) =>
        Effect.sync(() => {
          const now = Date.now()
          const due = [...items].filter(([, at]) => at <= now + leadMs).slice(0, limit)
          for (const [key] of due) items.delete(key)
          return due
        }),
      handle: ([key, dueAt]: readonly [string, number]) =>
        Effect.sync(() => handled.push({ key, dueAt, at: Date.now() }))
    }
  }
}

it.scopedLive(
  "a kind's items are handled once each, at their due time, by one timer re-armed when a sooner one is parked",
  () =>
    Effect.gen(function*() {
      const dueWork = yield* makeDueWork({ instanceId: "test", pollMs: 60_000 })
      const reminders = inMemoryKind("reminders")
      const expiries = inMemoryKind("expiries")
      yield* dueWork.register(reminders.kind)
      yield* dueWork.register(expiries.kind)
      yield* Effect.sleep("50 millis")
      const now = Date.now()
      // Parked later first, then sooner ones of both kinds: each re-arms the one timer.
      for (
        const [kind, key, delay] of [[reminders, "r-late", 900], [expiries, "e-soon", 200], [
          reminders,
          "r-soon",
          400
        ]] as const
      ) {
        kind.items.set(key, now + delay)
        yield* dueWork.parked(kind.kind.name, now + delay)
      }
      yield* Effect.sleep("1300 millis")
      const all = [...reminders.handled, ...expiries.handled].sort((a, b) => a.at - b.at)
      expect(all.map((h) => h.key)).toEqual(["e-soon", "r-soon", "r-late"])
      for (const h of all) {
        expect(h.at).toBeGreaterThanOrEqual(h.dueAt)
        // Without the re-arm the minute-long poll would be the only wake.
        expect(h.at - h.dueAt).toBeLessThan(150)
      }
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))),
  20_000
)

it.scopedLive("a kind with a lead is taken that long before its due time, never earlier", () =>
  Effect.gen(function*() {
    const dueWork = yield* makeDueWork({ instanceId: "test", pollMs: 60_000 })
    const timers = inMemoryKind("timers", 400)
    yield* dueWork.register(timers.kind)
    yield* Effect.sleep("50 millis")
    const dueAt = Date.now() + 1_000
    timers.items.set("t", dueAt)
    yield* dueWork.parked("timers", dueAt)
    yield* Effect.sleep("1500 millis")
    expect(timers.handled.map((h) => h.key)).toEqual(["t"])
    const [taken] = timers.handled
    // Taken within its lead: before its due time (the claim's cost is paid by then), not before the lead.
    expect(taken.at).toBeLessThan(dueAt)
    expect(taken.at).toBeGreaterThanOrEqual(dueAt - 400)
  }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:" }))), 20_000)
