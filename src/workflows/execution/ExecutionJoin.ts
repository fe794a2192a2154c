import { Data, Effect, type Fiber, Option, Stream } from "effect"
import {
  BadRequest,
  type Conflict,
  InternalError,
  type TooManyRequests,
  type WorkflowFailed
} from "../../core/errors.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { WorkflowDefinition } from "../definition/Workflow.js"
import type { Execution, ExecutionStore } from "./ExecutionStore.js"
import { type ExecutionUpdate, resultOf } from "./ExecutionViews.js"
import type { Launched, makeExecutionWatch } from "./ExecutionWatch.js"

/** The id was taken between looking and starting: the execution is joined instead. */
class ExecutionTaken extends Data.TaggedError("ExecutionTaken") {}

type Watch = Effect.Effect.Success<ReturnType<typeof makeExecutionWatch>>

/**
 * Starts under an Idempotency-Key. The key gives the execution id, and whichever request comes first
 * (the first one, or a retry after a crash between storing the key and the execution) creates the
 * execution; every other request with the key joins it: execute waits for its result, run reports it,
 * stream follows it from its first event.
 */
export const makeExecutionJoin = (deps: {
  readonly store: ExecutionStore["Type"]
  readonly watch: Watch
  /** Stores and launches the execution; none when its id is taken (a limited workflow's may be refused: 400, 409, 429). */
  readonly startIfNew: (
    definition: WorkflowDefinition,
    execution: Execution
  ) => Effect.Effect<Option.Option<Launched>, BadRequest | Conflict | TooManyRequests>
  readonly fiberOf: (id: string) => Option.Option<Fiber.RuntimeFiber<void>>
}) => {
  const { follow, reload, replay, settleAfter } = deps.watch
  const localFiber = (id: string) => Effect.sync(() => deps.fiberOf(id))

  /** The execution stored under the prepared one's id; another workflow's execution there is a taken id. */
  const storedAs = (prepared: Execution) =>
    Effect.flatMap(
      deps.store.get(prepared.id),
      (stored) =>
        Option.isSome(stored) && stored.value.workflowId !== prepared.workflowId
          ? Effect.fail(new BadRequest({ message: `Execution ${prepared.id} already exists` }))
          : Effect.succeed(stored)
    )

  /** The execution that took the id between looking and starting. */
  const takenBy = (prepared: Execution) =>
    Effect.flatMap(storedAs(prepared), (stored) =>
      Option.isSome(stored)
        ? Effect.succeed(stored.value)
        : Effect.fail(new BadRequest({ message: `Execution ${prepared.id} already exists` })))

  const startOrTaken = (definition: WorkflowDefinition, prepared: Execution) =>
    Effect.flatMap(
      deps.startIfNew(definition, prepared),
      (launched) => Option.isSome(launched) ? Effect.succeed(launched.value) : Effect.fail(new ExecutionTaken())
    )

  /** A stored execution's result, once it is not running (followed until it settles). */
  const resultWhenSettled = (
    prepared: Execution
  ): Effect.Effect<S.ExecutionResult, BadRequest | InternalError | WorkflowFailed> =>
    Effect.gen(function*() {
      const current = yield* takenBy(prepared)
      if (current.status === "running") {
        yield* Stream.runDrain(follow(current, current.lastSeq, localFiber(current.id)))
      }
      const settled = yield* reload(current.id)
      if (settled.status === "running") {
        return yield* Effect.zipRight(
          Effect.logError("workflow execution ended without settling").pipe(
            Effect.annotateLogs({ executionId: settled.id })
          ),
          InternalError.generic
        )
      }
      return yield* resultOf(settled)
    })

  return {
    execute: (definition: WorkflowDefinition, prepared: Execution) =>
      Effect.flatMap(storedAs(prepared), (stored) =>
        Option.isSome(stored)
          ? resultWhenSettled(prepared)
          : settleAfter(prepared.id, 0, startOrTaken(definition, prepared)).pipe(
            Effect.catchTag("ExecutionTaken", () => resultWhenSettled(prepared))
          )),

    run: (definition: WorkflowDefinition, prepared: Execution) =>
      Effect.gen(function*() {
        const stored = yield* storedAs(prepared)
        const execution = Option.isSome(stored)
          ? stored.value
          : yield* Effect.flatMap(deps.startIfNew(definition, prepared), (launched) =>
            Option.isSome(launched) ? Effect.succeed(launched.value.execution) : takenBy(prepared))
        // Queued for a concurrency slot (issue #33): said as a fresh `/run` says it.
        const waiting = execution.status === "running" && execution.queuedAt !== undefined
          ? { waiting: "concurrency" as const, queuedAt: execution.queuedAt }
          : {}
        return {
          executionId: execution.id,
          workflowId: execution.workflowId,
          status: execution.status,
          startAt: execution.createdAt,
          ...waiting
        }
      }),

    stream: (
      definition: WorkflowDefinition,
      prepared: Execution
    ): Effect.Effect<Stream.Stream<ExecutionUpdate, BadRequest | Conflict | TooManyRequests>, BadRequest> =>
      Effect.flatMap(storedAs(prepared), (stored) => {
        if (Option.isNone(stored)) {
          // Followed from before the start, as a fresh stream is; a lost race follows the winner's execution.
          return Effect.succeed(follow(
            prepared,
            0,
            Effect.flatMap(
              deps.startIfNew(definition, prepared),
              (launched) =>
                Option.isSome(launched) ? Effect.succeed(Option.some(launched.value.fiber)) : localFiber(prepared.id)
            )
          ))
        }
        return stored.value.status === "running"
          ? Effect.succeed(follow(stored.value, 0, localFiber(prepared.id)))
          : replay(stored.value, 0)
      })
  }
}
