import { Duration, Effect, Option, Predicate, Schedule } from "effect"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import type { Execution, ExecutionStore, StoredEvent } from "./ExecutionStore.js"

/**
 * How a store operation that failed (a connection reset, a failover) is tried again: at once, then
 * 100 ms doubling, six times (6.3 s in all). Past that the failure stands.
 */
export const STORE_ERROR_RETRY = Schedule.exponential("100 millis").pipe(Schedule.intersect(Schedule.recurs(6)))

/** A defect of the store's SQL (every store operation dies with its SqlError), wherever it surfaced. */
export const isStoreDefect = (defect: unknown): boolean => Predicate.isTagged(defect, "SqlError")

/** Whether the last stored events are these (the same type, origin and time each): a write that committed. */
export const storedAre = (stored: ReadonlyArray<StoredEvent>, events: ReadonlyArray<WorkflowEvent>) =>
  stored.length === events.length &&
  stored.every(({ event }, i) =>
    event.type === events[i].type && event.from === events[i].from && event.timestamp === events[i].timestamp
  )

/** The wait before an execution goes on after its `n`th death in a row (a store that reads but does not write). */
export const goOnDelay = (deaths: number) => Duration.seconds(Math.min(60, 2 ** (deaths - 1)))

class StoreDefect {
  constructor(readonly defect: unknown) {}
}

/**
 * A read of the store (running it again changes nothing) tried again while it fails with a store
 * defect (STORE_ERROR_RETRY); any other defect, or the last store defect, stands.
 */
export const retryingRead = <A, E>(read: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.retry(
    Effect.catchAllDefect(read, (defect) =>
      isStoreDefect(defect) ? Effect.fail(new StoreDefect(defect)) : Effect.die(defect)),
    {
      schedule: STORE_ERROR_RETRY,
      while: (error) =>
        error instanceof StoreDefect
    }
  ).pipe(
    Effect.catchIf((error): error is StoreDefect => error instanceof StoreDefect, (error) => Effect.die(error.defect))
  )

/**
 * A resume's claim (suspended at the version read → running, owned by `resume.owner`) where a store
 * failure is retried: the row read back is the claimed one when it committed (its answer lost), is
 * still suspended at that version when it did not (it runs again), or was taken by another (none).
 */
export const claimResumeRetrying = (
  store: ExecutionStore["Type"],
  execution: Execution,
  resume: Parameters<ExecutionStore["Type"]["claimResume"]>[1]
): Effect.Effect<Option.Option<Execution>> => {
  const claim = store.claimResume(execution, resume)
  const settle = Effect.flatMap(store.get(execution.id), (row) => {
    if (Option.isNone(row)) return Effect.succeed(Option.none<Execution>())
    const { owner, status, version } = row.value
    if (status === "suspended" && version === execution.version) return claim
    const ours = status === "running" && owner === resume.owner && version === execution.version + 1
    return Effect.succeed(ours ? row : Option.none<Execution>())
  })
  return Effect.catchAllDefect(
    claim,
    (defect) => isStoreDefect(defect) ? retryingRead(Effect.catchAllDefect(settle, Effect.die)) : Effect.die(defect)
  )
}
