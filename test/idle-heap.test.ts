import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { getHeapStatistics } from "node:v8"
import { collectHeap, decide, defaultIdleHeapOptions, IdleHeapLive, type IdleHeapState } from "../src/ops/IdleHeap.js"
import { collectWorkerHeapWhenIdle } from "../src/ops/WorkerIdleHeap.js"

/**
 * After a burst of load the service's heap holds the load's garbage until V8 runs a major GC, which an
 * idle process does not: the idle-heap watcher collects it once the process has gone quiet.
 */

const MB = 1024 * 1024
const options = defaultIdleHeapOptions
const start: IdleHeapState = { floorBytes: 60 * MB, quiet: 0, lastReclaimMs: 0 }
const idleSample = (heapMB: number, nowMs = 600_000) => ({
  heapBytes: heapMB * MB,
  cpuMicros: 10_000,
  wallMs: 2_000,
  nowMs
})
const busySample = (heapMB: number) => ({ heapBytes: heapMB * MB, cpuMicros: 800_000, wallMs: 2_000, nowMs: 600_000 })

const run = (samples: ReadonlyArray<ReturnType<typeof idleSample>>, from = start) => {
  let state = from
  const decisions: Array<boolean> = []
  for (const sample of samples) {
    const next = decide(options, state, sample)
    state = next.state
    decisions.push(next.reclaim)
  }
  return { state, decisions }
}

const heapTotal = () => getHeapStatistics().total_heap_size

/** About `mb` MB of small objects that live long enough to reach the old generation, then let go. */
const makeOldGarbage = (mb: number) => {
  let kept: Array<Array<number>> = []
  for (let i = 0; i < mb * 1024; i++) kept.push(Array.from({ length: 100 }, (_, j) => i + j))
  const size = kept.length
  kept = []
  return size
}

describe("idle heap", () => {
  it("collects only a grown heap, after two quiet samples in a row", () => {
    expect(run([busySample(300), busySample(300)]).decisions).toEqual([false, false])
    expect(run([busySample(300), idleSample(300), idleSample(300)]).decisions).toEqual([false, false, true])
    expect(run([idleSample(300), busySample(300), idleSample(300)]).decisions).toEqual([false, false, false])
  })

  it("leaves a heap alone that has not grown well past its floor", () => {
    // 1.5 x the floor is 90 MB; the growth must also be over 32 MB.
    expect(run([idleSample(85), idleSample(85), idleSample(85)]).decisions).toEqual([false, false, false])
    const small = { ...start, floorBytes: 20 * MB }
    expect(run([idleSample(45), idleSample(45)], small).decisions).toEqual([false, false])
    // The floor follows the heap down: a heap that shrank on its own is measured from its new size.
    expect(run([idleSample(40), idleSample(70), idleSample(80)]).decisions).toEqual([false, false, true])
  })

  it("collects at most once a minute", () => {
    const justCollected = { ...start, lastReclaimMs: 590_000 }
    expect(run([idleSample(300), idleSample(300)], justCollected).decisions).toEqual([false, false])
    expect(run([idleSample(300, 650_000), idleSample(300, 652_000)], justCollected).decisions).toEqual([false, true])
  })

  it.effect("the low-memory collection releases the garbage's pages", () =>
    Effect.gen(function*() {
      makeOldGarbage(120)
      const before = heapTotal()
      yield* collectHeap
      const after = heapTotal()
      expect(before - after).toBeGreaterThan(50 * MB)
    }))

  it.live("the watcher collects a grown heap once the process is quiet", () =>
    Effect.gen(function*() {
      yield* collectHeap
      const layer = IdleHeapLive({ ...options, every: "100 millis", idleCpuShare: 0.5 })
      yield* Effect.gen(function*() {
        yield* Effect.sleep("300 millis")
        makeOldGarbage(120)
        const grown = heapTotal()
        let now = grown
        for (let poll = 0; poll < 100 && grown - now < 50 * MB; poll++) {
          yield* Effect.sleep("100 millis")
          now = heapTotal()
        }
        expect(grown - now).toBeGreaterThan(50 * MB)
      }).pipe(Effect.provide(layer))
    }))

  it.live("a worker thread's watch collects once no work has come for its quiet time, and not before", () =>
    Effect.gen(function*() {
      yield* collectHeap
      let released = 0
      const idle = yield* collectWorkerHeapWhenIdle(Effect.sync(() => void released++), {
        quiet: "400 millis",
        minGrowthBytes: 32 * MB
      })
      makeOldGarbage(120)
      const grown = heapTotal()
      // Work keeps coming: nothing is collected.
      for (let tick = 0; tick < 10; tick++) {
        idle.worked()
        yield* Effect.sleep("100 millis")
      }
      expect(released).toBe(0)
      let now = heapTotal()
      for (let poll = 0; poll < 100 && released === 0; poll++) {
        yield* Effect.sleep("100 millis")
        now = heapTotal()
      }
      expect(released).toBe(1)
      expect(grown - now).toBeGreaterThan(50 * MB)
      // Idle without new work: nothing more to collect.
      yield* Effect.sleep("1 second")
      expect(released).toBe(1)
    }).pipe(Effect.scoped))
})
