import type { Effect, Stream } from "effect"
import type { Visibility } from "../../auth/Ownership.js"
import type {
  BadRequest,
  Conflict,
  InternalError,
  NotFound,
  TooManyRequests,
  UnprocessableEntity,
  ValidationError,
  WorkflowFailed
} from "../../core/errors.js"
import type * as S from "../api/WorkflowSchemas.js"
import type { ExecuteWait } from "../execution/ExecuteWait.js"
import type { RecordRead } from "../execution/ExecutionRecords.js"
import type { ExecutionQuery } from "../execution/ExecutionStore.js"
import type { ExecutionUpdate } from "../execution/ExecutionViews.js"

export interface StartOptions {
  readonly user?: unknown
  /** The user the execution belongs to. */
  readonly userId?: string | undefined
  /**
   * Under an Idempotency-Key: gives the id to use for the execution the request would start as
   * `executionId` (once the request is valid). The execution stored under it is then the one asked
   * for, joined instead of refused.
   */
  readonly idempotent?: (executionId: string) => Effect.Effect<string, BadRequest | UnprocessableEntity>
  /**
   * execute only (issue #42): once the execution parks, its state after EXECUTE_WAIT_SECONDS
   * (`bounded`: HTTP's default) or at once (`parked`); unset, it is held until it settles.
   */
  readonly wait?: ExecuteWait | undefined
}

/** The engine's calls by workflow id (what the HTTP layer uses). */
export interface WorkflowEngineCore {
  readonly list: Effect.Effect<ReadonlyArray<typeof S.WorkflowSummary.Type>>
  readonly details: (id: string) => Effect.Effect<typeof S.WorkflowDetails.Type, NotFound>
  /** Runs to the end or the first suspension (under `wait`, its state once it is parked: see ExecuteWait). */
  readonly execute: (
    id: string,
    request: S.ExecuteRequest,
    options?: StartOptions
  ) => Effect.Effect<
    S.ExecutionResult | S.ExecutionParked,
    | NotFound
    | ValidationError
    | BadRequest
    | Conflict
    | TooManyRequests
    | UnprocessableEntity
    | WorkflowFailed
    | InternalError
  >
  /** Starts in the background. */
  readonly run: (
    id: string,
    request: S.ExecuteRequest,
    options?: StartOptions
  ) => Effect.Effect<
    typeof S.RunStarted.Type,
    NotFound | ValidationError | BadRequest | Conflict | TooManyRequests | UnprocessableEntity
  >
  /** Starts and follows the execution's events until it settles, then its result. */
  readonly stream: (
    id: string,
    request: S.ExecuteRequest,
    options?: StartOptions
  ) => Effect.Effect<
    Stream.Stream<ExecutionUpdate, BadRequest | Conflict | TooManyRequests>,
    NotFound | ValidationError | BadRequest | Conflict | TooManyRequests | UnprocessableEntity
  >
  /** Replays the events after `afterSeq`, then follows live ones until the execution settles, then its result. */
  // `visibility` (default: everyone's): another user's execution is not found, exactly like a missing one.
  readonly attach: (
    id: string,
    executionId: string,
    afterSeq: number,
    visibility?: Visibility
  ) => Effect.Effect<Stream.Stream<ExecutionUpdate>, NotFound>
  readonly suspend: (
    id: string,
    executionId: string,
    reason: string,
    visibility?: Visibility
  ) => Effect.Effect<typeof S.SuspendResult.Type, NotFound | BadRequest>
  readonly resume: (
    id: string,
    executionId: string,
    resumeData: unknown,
    stepId?: string,
    visibility?: Visibility
  ) => Effect.Effect<
    S.ExecutionResult,
    NotFound | ValidationError | BadRequest | Conflict | WorkflowFailed | InternalError
  >
  readonly cancel: (
    id: string,
    executionId: string,
    reason: string,
    visibility?: Visibility
  ) => Effect.Effect<typeof S.CancelResult.Type, NotFound | BadRequest>
  /** Deletes a finished execution with its events; a running or suspended one is refused (BadRequest). */
  readonly remove: (
    id: string,
    executionId: string,
    visibility?: Visibility
  ) => Effect.Effect<typeof S.ExecutionDeleted.Type, NotFound | BadRequest>
  readonly state: (
    id: string,
    executionId: string,
    visibility?: Visibility
  ) => Effect.Effect<typeof S.ExecutionState.Type, NotFound>
  readonly executions: (query: ExecutionQuery) => Effect.Effect<ReadonlyArray<typeof S.ExecutionRecord.Type>, NotFound>
  /**
   * A new execution (the caller's) that copies the committed outputs of the steps before
   * `request.fromStep` from this one and runs from there (issue #33).
   */
  readonly replay: (
    id: string,
    executionId: string,
    request: S.ReplayRequest,
    options?: StartOptions,
    visibility?: Visibility
  ) => Effect.Effect<
    typeof S.ReplayStarted.Type,
    NotFound | ValidationError | BadRequest | Conflict | TooManyRequests | UnprocessableEntity
  >
  /** A replay of a failed execution from the step it failed at (never in place); 409 unless it failed. */
  readonly restart: (
    id: string,
    executionId: string,
    options?: StartOptions,
    visibility?: Visibility
  ) => Effect.Effect<
    typeof S.ReplayStarted.Type,
    NotFound | ValidationError | BadRequest | Conflict | TooManyRequests | UnprocessableEntity
  >
  /**
   * One execution's whole record (a listing shows large ones as summaries), its events read by page as
   * they are sent; at most `workflows.recordReadsPerOwner` in flight per `reader` (the caller).
   */
  readonly record: (
    executionId: string,
    visibility?: Visibility,
    reader?: string
  ) => Effect.Effect<RecordRead, NotFound | TooManyRequests>
  /** A page of the execution's events after `afterSeq` (inner steps' included), at most `limit`. */
  readonly events: (
    id: string,
    executionId: string,
    page: { readonly afterSeq: number; readonly limit: number },
    visibility?: Visibility
  ) => Effect.Effect<typeof S.ExecutionEventsPage.Type, NotFound>
  /** How many executions have live listeners (event hubs in memory): for tests and diagnostics. */
  readonly liveEventHubs: Effect.Effect<number>
}
