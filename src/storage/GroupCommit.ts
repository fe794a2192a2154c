import type { SqlClient } from "@effect/sql"
import { Cause, Effect, Exit, type Scope } from "effect"
import { allExit, makeBatching } from "./batching.js"
import { ownTransaction } from "./transaction.js"

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

class WriteFailed {
  readonly _tag = "WriteFailed"
}

type Write = Effect.Effect<unknown, unknown>

/**
 * What a group commit does with one batch, without the batching: the writes in one transaction, with
 * the fallbacks described above, and each write's exit.
 */
export const makeTransactionBatches = <Staged = never>(
  sql: SqlClient.SqlClient,
  flush: (rows: ReadonlyArray<Staged>) => Effect.Effect<unknown, unknown> = () => Effect.void
): Pick<GroupCommit<Staged>, "stage"> & {
  readonly commit: (batch: ReadonlyArray<Write>) => Effect.Effect<ReadonlyArray<Exit.Exit<unknown, unknown>>>
} => {
  // The rows staged by the writes of the transaction being written (one batch at a time).
  let staged: Array<Staged> = []
  const flushStaged = Effect.suspend(() => {
    const rows = staged
    staged = []
    return rows.length === 0 ? Effect.void : flush(rows)
  })
  /**
   * `body`, then the rows it staged, in one transaction (a flush failure mapped by `flushFailed`);
   * nothing is left staged, nor a failed COMMIT's transaction open, after it, whatever its outcome.
   */
  const transaction = <A, E, F = unknown>(
    body: Effect.Effect<A, E>,
    flushFailed: (error: unknown) => F = (error) => error as F
  ) =>
    ownTransaction(sql)(Effect.suspend(() => {
      staged = []
      return Effect.tap(body, () => Effect.mapError(flushStaged, flushFailed))
    })).pipe(Effect.ensuring(Effect.sync(() => {
      staged = []
    })))

  /** Each write alone, in its own transaction: what a batch falls back to when one of its writes failed. */
  const oneByOne = (batch: ReadonlyArray<Write>) => Effect.forEach(batch, (write) => Effect.exit(transaction(write)))

  const commit = (batch: ReadonlyArray<Write>) =>
    Effect.gen(function*() {
      const results: Array<unknown> = []
      const together = yield* Effect.exit(transaction(
        Effect.forEach(batch, (write) =>
          Effect.matchCauseEffect(write, {
            onFailure: () => Effect.fail(new WriteFailed()),
            onSuccess: (value) => Effect.sync(() => results.push(value))
          }), { discard: true }),
        // Which write's rows failed is not known here: each write then runs again alone.
        () => new WriteFailed()
      ))
      if (Exit.isSuccess(together)) return results.map((result) => Exit.succeed(result))
      if (
        Cause.failureOption(together.cause).pipe((failure) =>
          failure._tag === "Some" && failure.value instanceof WriteFailed
        )
      ) {
        return yield* oneByOne(batch)
      }
      // BEGIN or COMMIT failed (or the writer was interrupted): nothing is known about the outcome.
      return allExit(batch.length, Exit.failCause(together.cause))
    })

  return {
    stage: (rows) => {
      for (const row of rows) staged.push(row)
    },
    commit
  }
}

export const makeGroupCommit = <Staged = never>(
  sql: SqlClient.SqlClient,
  flush?: (rows: ReadonlyArray<Staged>) => Effect.Effect<unknown, unknown>
): Effect.Effect<GroupCommit<Staged>, never, Scope.Scope> => {
  const { commit, stage } = makeTransactionBatches(sql, flush)
  return Effect.map(makeBatching<Write>(commit), (submit) => ({ stage, submit: (write) => submit(write) }))
}
