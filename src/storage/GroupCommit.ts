import type { SqlClient } from "@effect/sql"
import { Cause, Deferred, Effect, Exit, Queue, type Scope } from "effect"

/**
 * Group commit: writes submitted at about the same moment share one transaction, so one commit (one
 * fsync on SQLite with `synchronous = FULL`, one WAL flush on Postgres) serves many callers. Each
 * caller still waits for the commit of ITS write before it goes on, so nothing it does next can
 * overtake what it wrote.
 *
 * A write that fails (an SQL error, a defect) must fail for its caller only: the shared transaction is
 * rolled back and every write of that batch runs again, each in its own transaction. Conditional
 * writes that do not apply (an UPDATE matching no row) are not failures: they report that to their
 * caller inside the shared transaction and leave the others alone. When the COMMIT itself fails, its
 * outcome is unknown, so the writes are not run again: every caller of that batch gets the failure.
 */
export interface GroupCommit<Staged = never> {
  /** Runs `write` in the next shared transaction; succeeds once that transaction has committed. */
  readonly submit: <A, E>(write: Effect.Effect<A, E>) => Effect.Effect<A, E>
  /**
   * Only inside a submitted write: rows the `flush` given to makeGroupCommit writes at the end of the
   * write's transaction, before its COMMIT (one statement for the rows of every write in it). A
   * write whose rows fail to flush fails for its caller only, like a failing write.
   */
  readonly stage: (rows: ReadonlyArray<Staged>) => void
}

interface Pending {
  readonly write: Effect.Effect<unknown, unknown>
  readonly done: Deferred.Deferred<unknown, unknown>
}

/** Writes taken into one transaction at most; the rest wait for the next one. */
const MAX_BATCH = 256
/** Writes waiting at most (each caller waits for its own, so this bounds waiting callers, not data). */
const MAX_QUEUED = 16_384

/** Resumes after the current turn of the event loop, once its microtasks have run. */
export const nextTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

class WriteFailed {
  readonly _tag = "WriteFailed"
}

export const makeGroupCommit = <Staged = never>(
  sql: SqlClient.SqlClient,
  flush: (rows: ReadonlyArray<Staged>) => Effect.Effect<unknown, unknown> = () => Effect.void
): Effect.Effect<GroupCommit<Staged>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.bounded<Pending>(MAX_QUEUED)
    // Runs after the writer has stopped: whoever still waits is told, never left hanging.
    yield* Effect.addFinalizer(() =>
      Queue.takeAll(queue).pipe(
        Effect.flatMap((left) => Effect.forEach(left, (pending) => Deferred.interrupt(pending.done), { discard: true })),
        Effect.zipRight(Queue.shutdown(queue))
      )
    )

    const settle = (pending: Pending, exit: Exit.Exit<unknown, unknown>) => Deferred.done(pending.done, exit)

    // The rows staged by the writes of the transaction being written (the writer runs one at a time).
    let staged: Array<Staged> = []
    const flushStaged = Effect.suspend(() => {
      const rows = staged
      staged = []
      return rows.length === 0 ? Effect.void : flush(rows)
    })
    /**
     * `body`, then the rows it staged, in one transaction (a flush failure mapped by `flushFailed`);
     * nothing is left staged after it, whatever its outcome.
     */
    const transaction = <A, E, F = unknown>(body: Effect.Effect<A, E>, flushFailed: (error: unknown) => F = (error) => error as F) =>
      sql.withTransaction(Effect.suspend(() => {
        staged = []
        return Effect.tap(body, () => Effect.mapError(flushStaged, flushFailed))
      })).pipe(Effect.ensuring(Effect.sync(() => {
        staged = []
      })))

    /** Each write alone, in its own transaction: what a batch falls back to when one of its writes failed. */
    const oneByOne = (batch: ReadonlyArray<Pending>) =>
      Effect.forEach(batch, (pending) => Effect.flatMap(Effect.exit(transaction(pending.write)), (exit) => settle(pending, exit)), {
        discard: true
      })

    const commit = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        const results: Array<unknown> = []
        const together = yield* Effect.exit(transaction(
          Effect.forEach(batch, (pending) =>
            Effect.matchCauseEffect(pending.write, {
              onFailure: () => Effect.fail(new WriteFailed()),
              onSuccess: (value) => Effect.sync(() => results.push(value))
            }), { discard: true }),
          // Which write's rows failed is not known here: each write then runs again alone.
          () => new WriteFailed()
        ))
        if (Exit.isSuccess(together)) {
          for (let i = 0; i < batch.length; i++) yield* settle(batch[i], Exit.succeed(results[i]))
        } else if (Cause.failureOption(together.cause).pipe((failure) => failure._tag === "Some" && failure.value instanceof WriteFailed)) {
          yield* oneByOne(batch)
        } else {
          // BEGIN or COMMIT failed (or the writer was interrupted): nothing is known about the outcome.
          for (const pending of batch) yield* settle(pending, Exit.failCause(together.cause))
        }
      })

    const writer = Effect.gen(function*() {
      const batch = [yield* Queue.take(queue)]
      // Whoever was taken into the batch is told when the writer stops before answering them.
      yield* Effect.onInterrupt(
        Effect.gen(function*() {
          // Let every fiber that can run in this turn of the event loop reach its own write (fibers
          // resume in microtasks), so that they share this commit; an idle process waits one turn.
          yield* nextTurn
          batch.push(...(yield* Queue.takeUpTo(queue, MAX_BATCH - 1)))
          yield* commit(batch)
        }),
        () => Effect.forEach(batch, (pending) => Deferred.interrupt(pending.done), { discard: true })
      )
    })

    // The writer's own statements are not traced: the callers' spans cover their writes.
    yield* writer.pipe(Effect.forever, Effect.withTracerEnabled(false), Effect.interruptible, Effect.forkScoped)

    return {
      stage: (rows) => {
        for (const row of rows) staged.push(row)
      },
      submit: <A, E>(write: Effect.Effect<A, E>) =>
        Effect.flatMap(Deferred.make<A, E>(), (done) =>
          Effect.zipRight(
            Queue.offer(queue, { write, done } as Pending),
            Deferred.await(done)
          ))
    }
  })
