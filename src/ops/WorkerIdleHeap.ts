// Modules, not the index: this runs in the writer threads, whose bundles hold only what they import.
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { collectHeap, heapBytes } from "./IdleHeap.js"

/**
 * IdleHeap for a worker thread (the stores' commit thread, the span writer): each thread has its own V8
 * heap, which the main thread's idle collection does not reach, and which a burst of load leaves grown
 * (a thread that has stopped receiving work allocates nothing, so V8 never collects it). A thread knows
 * exactly when it is idle: it has been given no work for `quiet`. It then collects its heap if the heap
 * has grown by `minGrowthBytes` since the thread's last collection (or start).
 */
export interface WorkerIdleHeapOptions {
  readonly quiet: Duration.DurationInput
  readonly minGrowthBytes: number
}

export const defaultWorkerIdleHeapOptions: WorkerIdleHeapOptions = {
  quiet: "3 seconds",
  minGrowthBytes: 16 * 1024 * 1024
}

/**
 * Starts the watch in the calling scope; gives `worked`, to be called each time the thread is given work.
 * `release` runs after each collection (a connection's caches, say).
 */
export const collectWorkerHeapWhenIdle = (
  release: Effect.Effect<void> = Effect.void,
  options: WorkerIdleHeapOptions = defaultWorkerIdleHeapOptions
) =>
  Effect.gen(function*() {
    const quietMs = Duration.toMillis(options.quiet)
    let floorBytes = heapBytes()
    let lastWorkMs = 0
    let workedSinceCheck = false
    const check = Effect.suspend(() => {
      if (!workedSinceCheck || Date.now() - lastWorkMs < quietMs) return Effect.void
      workedSinceCheck = false
      if (heapBytes() - floorBytes < options.minGrowthBytes) return Effect.void
      return collectHeap.pipe(
        Effect.zipRight(release),
        Effect.ensuring(Effect.sync(() => void (floorBytes = heapBytes()))),
        Effect.catchAllCause(() => Effect.void)
      )
    })
    yield* Effect.forkScoped(Effect.repeat(check, Schedule.spaced(Duration.millis(quietMs / 2))))
    return {
      worked: () => {
        lastWorkMs = Date.now()
        workedSinceCheck = true
      }
    }
  })
