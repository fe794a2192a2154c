import { Clock, Duration, Effect, type Fiber, Option } from "effect"
import type * as S from "../api/WorkflowSchemas.js"
import type { Execution, ExecutionStore } from "./ExecutionStore.js"
import { waitingOf } from "./ExecutionViews.js"
import { retryingRead } from "./storeRetry.js"

/**
 * How long an execute holds its caller (issue #42, settled 15): until the execution settles or, once
 * it is parked (by a sleep step, or queued for a concurrency slot), until EXECUTE_WAIT_SECONDS have
 * passed since the call (`bounded`) or at once (`parked`); then it answers the execution's state (202
 * over HTTP). A request parked for a year held its socket and memory for a year.
 */
export type ExecuteWait = "bounded" | "parked"

/** Parked: running to clients, waiting for its wake time or for a slot. */
const isParked = (execution: Execution) =>
  execution.status === "running" && (execution.queuedAt !== undefined || execution.wakeAt !== undefined)

/** Whether execute answered a parked execution's state (a settled execution's answer is never running). */
export const isParkedAnswer = (answer: S.ExecutionResult | S.ExecutionParked): answer is S.ExecutionParked =>
  answer.status === "running"

export const parkedState = (execution: Execution): S.ExecutionParked => ({
  executionId: execution.id,
  startAt: execution.createdAt,
  endAt: null,
  status: "running",
  result: null,
  ...waitingOf(execution)
})

export const makeExecuteWait = (deps: {
  readonly store: ExecutionStore["Type"]
  /** The execution's fiber on this instance, if one runs it. */
  readonly fiberOf: (id: string) => Option.Option<Fiber.RuntimeFiber<void>>
  readonly waitMs: number
  /** How often an execution run elsewhere (or between a wake and its fiber) is looked at again. */
  readonly pollMs: number
}) => {
  /**
   * The execution's state once it is parked at or past `deadline`; never while it runs or once it has
   * settled (the settling answer is the caller's). Past the deadline it costs nothing while a fiber here
   * runs it: its end (a park, a settling, a hand-over) is when the row is read.
   */
  const parkedPast = (id: string, deadline: number): Effect.Effect<S.ExecutionParked> =>
    Effect.gen(function*() {
      // Nothing is answered before the deadline: an execute that settles by then (nearly all) never
      // watches its fiber nor reads its row (that watch cost bench row 5 about a tenth).
      const before = deadline - (yield* Clock.currentTimeMillis)
      if (before > 0) yield* Effect.sleep(Duration.millis(before))
      let ended: Fiber.RuntimeFiber<void> | undefined
      for (;;) {
        // One that ended and is still listed is not waited for again.
        const fiber = Option.filter(deps.fiberOf(id), (one) => one !== ended)
        if (Option.isSome(fiber)) {
          yield* fiber.value.await
          ended = fiber.value
          // A settling is published before its fiber ends: its waiter answers first.
          yield* Effect.yieldNow()
        }
        const row = yield* retryingRead(deps.store.get(id))
        if (Option.isSome(row) && row.value.status !== "running") return yield* Effect.never
        if (Option.isSome(row) && isParked(row.value)) {
          const left = deadline - (yield* Clock.currentTimeMillis)
          if (left <= 0) return parkedState(row.value)
          // Then looked at again: it may have woken (its new fiber is waited for) or settled.
          yield* Effect.sleep(Duration.millis(left))
        } else if (Option.isNone(fiber)) {
          yield* Effect.sleep(Duration.millis(deps.pollMs))
        }
      }
    })

  /**
   * `settle` (the execution's answer once it settles, given the effect that says it was launched),
   * or under `wait` its state once it is parked (see ExecuteWait), whichever comes first.
   */
  const hold = <E>(
    id: string,
    wait: ExecuteWait | undefined,
    settle: (launched: Effect.Effect<void>) => Effect.Effect<S.ExecutionResult, E>
  ): Effect.Effect<S.ExecutionResult | S.ExecutionParked, E> =>
    wait === undefined ? settle(Effect.void) : Effect.gen(function*() {
      const deadline = (yield* Clock.currentTimeMillis) + (wait === "parked" ? 0 : deps.waitMs)
      const launched = yield* Effect.makeLatch(false)
      return yield* Effect.raceFirst(settle(launched.open), Effect.zipRight(launched.await, parkedPast(id, deadline)))
    })

  return { hold }
}
