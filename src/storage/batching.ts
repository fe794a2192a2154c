import type { Exit} from "effect";
import { Deferred, Effect, Queue, type Scope } from "effect"

/** Resumes after the current turn of the event loop, once its microtasks have run. */
export const nextTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Items in one batch at most; the rest wait for the next one. */
const MAX_BATCH = 256
/** Items waiting at most (each caller waits for its own, so this bounds waiting callers, not data). */
const MAX_QUEUED = 16_384

interface Pending<I> {
  readonly item: I
  readonly done: Deferred.Deferred<unknown, unknown>
}

/**
 * Items submitted at about the same moment handled together: `process` takes a batch (the items
 * submitted while the previous batch was being handled, and those of the current turn of the event
 * loop, at most MAX_BATCH) and answers each item's exit, in order. One batch at a time, so items are
 * handled in the order they were submitted; each caller waits for its own item's answer.
 */
export const makeBatching = <I>(
  process: (batch: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<Exit.Exit<unknown, unknown>>>
): Effect.Effect<<A, E>(item: I) => Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.bounded<Pending<I>>(MAX_QUEUED)
    // Runs after the worker has stopped: whoever still waits is told, never left hanging.
    yield* Effect.addFinalizer(() =>
      Queue.takeAll(queue).pipe(
        Effect.flatMap((left) => Effect.forEach(left, (pending) => Deferred.interrupt(pending.done), { discard: true })),
        Effect.zipRight(Queue.shutdown(queue))
      )
    )

    const worker = Effect.gen(function*() {
      const batch = [yield* Queue.take(queue)]
      // Whoever was taken into the batch is told when the worker stops before answering them.
      yield* Effect.onInterrupt(
        Effect.gen(function*() {
          // Let every fiber that can run in this turn of the event loop submit (fibers resume in
          // microtasks), so that they share this batch; an idle process waits one turn.
          yield* nextTurn
          batch.push(...(yield* Queue.takeUpTo(queue, MAX_BATCH - 1)))
          const exits = yield* process(batch.map((pending) => pending.item))
          for (let i = 0; i < batch.length; i++) yield* Deferred.done(batch[i].done, exits[i])
        }),
        () => Effect.forEach(batch, (pending) => Deferred.interrupt(pending.done), { discard: true })
      )
    })
    yield* worker.pipe(Effect.forever, Effect.withTracerEnabled(false), Effect.interruptible, Effect.forkScoped)

    return <A, E>(item: I) =>
      Effect.flatMap(Deferred.make<unknown, unknown>(), (done) =>
        Effect.zipRight(Queue.offer(queue, { item, done }), Deferred.await(done) as Effect.Effect<A, E>))
  })

/** The same exit for every item of a batch. */
export const allExit = <A, E>(size: number, exit: Exit.Exit<A, E>): ReadonlyArray<Exit.Exit<A, E>> => Array.from({ length: size }, () => exit)
