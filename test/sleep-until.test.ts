import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { sleepUntil } from "../src/workflows/steps/Sleep.js"

// A woken sleeper waits the rest of its time in memory (steps/Sleep.ts) and a retry's back-off waits for
// its committed due time (steps/PolicyRun.ts): a Node timer may fire a millisecond before the clock reads
// its time (Effect.sleep in this loop woke early 14 times in 2,000), which the chaos oracle saw as a sleep
// woken before its wakeAt. sleepUntil sleeps what is left again.
it.live(
  "sleepUntil never returns before the clock reads its time (2,000 concurrent sleeps of 1 to 37 ms)",
  () =>
    Effect.gen(function*() {
      let early = 0
      yield* Effect.forEach(Array.from({ length: 2_000 }, (_, i) => i), (i) =>
        Effect.suspend(() => {
          const due = Date.now() + 1 + (i % 37)
          return Effect.map(sleepUntil(due), () => {
            if (Date.now() < due) early++
          })
        }), { concurrency: 200, discard: true })
      expect(early).toBe(0)
    }),
  60_000
)
