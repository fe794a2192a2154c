import { Worker } from "@effect/platform"
import { NodeWorker } from "@effect/platform-node"
import { Deferred, Effect, Scope } from "effect"
import { Worker as ThreadWorker } from "node:worker_threads"

/** Starts a worker thread (again, if it dies). */
export type SpawnThread = (script: string, workerData: { readonly filename: string }) => ThreadWorker

export const spawnThread: SpawnThread = (script, workerData) => new ThreadWorker(script, { workerData })

/** How long after its layer is built a thread boots when no request has started it: off start-up's path. */
const BOOT_AFTER = "1 second"

/**
 * Requests answered by a worker thread running `script` (an @effect/platform WorkerRunner) on the
 * SQLite file `filename`, for as long as the calling scope lasts. The thread boots on the first request
 * or `BOOT_AFTER` the layer is built, whichever comes first: start-up does not pay for the boot, the
 * first burst of requests rarely does, and the thread is part of the idle service's memory rather than
 * something a burst adds. If it dies, @effect/platform starts a new one (the requests it had fail, and
 * their callers report it).
 */
export const threadRequests = <I, O>(script: string, filename: string, spawn: SpawnThread = spawnThread) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const spawned = yield* Deferred.make<Worker.Worker<I, O, unknown>, unknown>()
    const start = yield* Effect.once(
      Effect.flatMap(Worker.WorkerManager, (manager) => manager.spawn<I, O, unknown>({})).pipe(
        Effect.exit,
        Effect.flatMap((exit) => Deferred.done(spawned, exit)),
        Effect.provide(NodeWorker.layer(() => spawn(script, { filename }))),
        Scope.extend(scope),
        Effect.forkIn(scope)
      )
    )
    yield* Effect.forkIn(Effect.delay(start, BOOT_AFTER), scope)
    const thread = Deferred.await(spawned)
    return (input: I): Effect.Effect<O, unknown> =>
      Effect.zipRight(start, Effect.flatMap(thread, (worker) => worker.executeEffect(input)))
  })
