import { Worker } from "@effect/platform"
import { NodeWorker } from "@effect/platform-node"
import { Deferred, Effect, Scope } from "effect"
import { Worker as ThreadWorker } from "node:worker_threads"

/** Starts a worker thread (again, if it dies). */
export type SpawnThread = (script: string, workerData: { readonly filename: string }) => ThreadWorker

export const spawnThread: SpawnThread = (script, workerData) => new ThreadWorker(script, { workerData })

/**
 * Requests answered by a worker thread running `script` (an @effect/platform WorkerRunner) on the
 * SQLite file `filename`, for as long as the calling scope lasts. The thread is started by the first
 * request, so start-up does not pay for its boot; if it dies, @effect/platform starts a new one (the
 * requests it had fail, and their callers report it).
 */
export const threadRequests = <I, O>(script: string, filename: string, spawn: SpawnThread = spawnThread) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const spawned = yield* Deferred.make<Worker.Worker<I, O, unknown>, unknown>()
    const start = Effect.flatMap(Worker.WorkerManager, (manager) => manager.spawn<I, O, unknown>({})).pipe(
      Effect.exit,
      Effect.flatMap((exit) => Deferred.done(spawned, exit)),
      Effect.provide(NodeWorker.layer(() => spawn(script, { filename }))),
      Scope.extend(scope),
      Effect.forkIn(scope)
    )
    let started = false
    const request = (input: I): Effect.Effect<O, unknown> =>
      Effect.suspend(() => {
        if (started) return Effect.flatMap(Deferred.await(spawned), (worker) => worker.executeEffect(input))
        started = true
        return Effect.zipRight(start, request(input))
      })
    return request
  })
