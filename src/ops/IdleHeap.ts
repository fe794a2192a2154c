import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { getHeapStatistics } from "node:v8"

/**
 * Gives back to the system the memory a burst of load left in V8's heap, once the process has gone idle.
 *
 * V8 keeps a grown heap until its next major GC, and an idle process allocates too little to run one.
 * Its memory reducer, meant for exactly this, judges "idle" by the allocation rate of the last GC
 * cycles, which are all the load's when nothing has been collected since, so it only acts on its
 * 100 s watchdog (measured after 300 slow agent streams: 430 MB resident for 100 s, then 132 MB; the
 * garbage is the requests', nothing is retained). This watches what the memory reducer cannot: the
 * process's own CPU time. When the heap has grown well past its floor and the process has used
 * almost no CPU for a few seconds, it asks V8 for the full, memory-reducing collection a low-memory
 * notification runs, through the in-process inspector (`HeapProfiler.collectGarbage`, the one route
 * to it that needs no command-line flag; a plain full GC keeps the emptied pages committed).
 */

export interface IdleHeapOptions {
  /** How often CPU time and heap size are sampled. */
  readonly every: Duration.DurationInput
  /** Samples in a row with at most `idleCpuShare` of one core used before the heap is collected. */
  readonly quietSamples: number
  readonly idleCpuShare: number
  /** The heap must exceed its floor by this factor and by `minGrowthBytes` to be worth collecting. */
  readonly growthFactor: number
  readonly minGrowthBytes: number
  /** At most one collection in this time. */
  readonly spacing: Duration.DurationInput
}

export const defaultIdleHeapOptions: IdleHeapOptions = {
  every: "2 seconds",
  quietSamples: 2,
  idleCpuShare: 0.05,
  growthFactor: 1.5,
  minGrowthBytes: 32 * 1024 * 1024,
  spacing: "1 minute"
}

export interface IdleHeapState {
  /** The smallest heap seen since start-up or since the last collection. */
  readonly floorBytes: number
  readonly quiet: number
  readonly lastReclaimMs: number
}

export interface HeapSample {
  readonly heapBytes: number
  /** CPU time (user + system) used since the last sample, and the wall time it covers. */
  readonly cpuMicros: number
  readonly wallMs: number
  readonly nowMs: number
}

/** The next state, and whether to collect now. */
export const decide = (
  options: IdleHeapOptions,
  state: IdleHeapState,
  sample: HeapSample
): { readonly state: IdleHeapState; readonly reclaim: boolean } => {
  const floorBytes = Math.min(state.floorBytes, sample.heapBytes)
  const idle = sample.cpuMicros <= options.idleCpuShare * sample.wallMs * 1000
  const quiet = idle ? state.quiet + 1 : 0
  const grown = sample.heapBytes > floorBytes * options.growthFactor &&
    sample.heapBytes - floorBytes > options.minGrowthBytes
  const spaced = sample.nowMs - state.lastReclaimMs >= Duration.toMillis(options.spacing)
  return {
    state: { floorBytes, quiet, lastReclaimMs: state.lastReclaimMs },
    reclaim: quiet >= options.quietSamples && grown && spaced
  }
}

/** V8's low-memory collection (every unreachable object, emptied pages released), via the in-process inspector. */
export const collectHeap: Effect.Effect<void, unknown> = Effect.gen(function*() {
  // Node can be built without the inspector: the import or the connection then fails, and nothing is collected.
  const { Session } = yield* Effect.tryPromise(() => import("node:inspector"))
  const session = new Session()
  yield* Effect.acquireUseRelease(
    Effect.try(() => session.connect()),
    () =>
      Effect.async<void, Error>((resume) => {
        session.post(
          "HeapProfiler.collectGarbage",
          (error) => resume(error === null ? Effect.void : Effect.fail(error))
        )
      }),
    () => Effect.sync(() => session.disconnect())
  )
})

/** The V8 heap's size, of the calling thread's isolate. */
export const heapBytes = () => getHeapStatistics().total_heap_size

const megabytes = (bytes: number) => Math.round(bytes / (1024 * 1024))

/** The watcher as a layer for the service's process (not for embedders, whose process is theirs). */
export const IdleHeapLive = (options: IdleHeapOptions = defaultIdleHeapOptions) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    let state: IdleHeapState = { floorBytes: heapBytes(), quiet: 0, lastReclaimMs: 0 }
    let cpu = process.cpuUsage()
    let at = Date.now()
    const tick = Effect.suspend(() => {
      const nowMs = Date.now()
      const used = process.cpuUsage(cpu)
      cpu = process.cpuUsage()
      const sample = { heapBytes: heapBytes(), cpuMicros: used.user + used.system, wallMs: nowMs - at, nowMs }
      at = nowMs
      const next = decide(options, state, sample)
      state = next.state
      if (!next.reclaim) return Effect.void
      return collectHeap.pipe(
        Effect.andThen(() => {
          const after = heapBytes()
          // Measured from the collection's end, so its own CPU time does not count as load.
          cpu = process.cpuUsage()
          at = Date.now()
          state = { floorBytes: after, quiet: 0, lastReclaimMs: at }
          return Effect.logDebug(`idle: heap collected, ${megabytes(sample.heapBytes)} MB -> ${megabytes(after)} MB`)
        }),
        Effect.catchAllCause((cause) => Effect.logDebug("idle: the heap could not be collected", cause))
      )
    })
    yield* Effect.forkScoped(Effect.repeat(tick, Schedule.spaced(options.every)))
  }))
