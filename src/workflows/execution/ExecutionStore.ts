import type { Statement } from "@effect/sql"
import { Context, type Effect, type Option } from "effect"
import type { WorkflowEvent } from "../api/WorkflowSchemas.js"
import type { RetryState } from "../steps/RetryState.js"
import type {
  Checkpoint,
  Claim,
  Ending,
  Execution,
  ExecutionListing,
  ExecutionQuery,
  Holder,
  Replay,
  StoredEvent,
  Suspension
} from "./ExecutionRows.js"

export type {
  Checkpoint,
  Claim,
  Ending,
  Execution,
  ExecutionListing,
  ExecutionQuery,
  Holder,
  Replay,
  StoredEvent,
  Suspension
} from "./ExecutionRows.js"

/**
 * The source of truth for executions. Every write is conditional on the status (and, for a drive
 * fiber, the version) it expects and reports whether it applied, so exactly one of racing callers
 * proceeds on every backend. A write and its events are one transaction: the events' numbers come from
 * the row's `last_seq`, bumped by the same UPDATE, so the row lock (Postgres) or the write lock (SQLite)
 * orders writers and numbers never collide. Writes go through a group commit: concurrent executions
 * share transactions, and a write answers only once the transaction holding it has committed.
 * Each write answers with the number of its last event, or none when its condition did not hold.
 */
export class ExecutionStore extends Context.Tag("ExecutionStore")<ExecutionStore, {
  /** Inserts the execution with its first events (numbered from 1); none when the id is taken. */
  readonly create: (execution: Execution, events: ReadonlyArray<WorkflowEvent>) => Effect.Effect<Option.Option<number>>
  readonly get: (id: string) => Effect.Effect<Option.Option<Execution>>
  readonly exists: (id: string) => Effect.Effect<boolean>
  /** Appends events to a held execution (a step starting); none when the claim is lost (the step must not run). */
  readonly append: (claim: Claim, events: ReadonlyArray<WorkflowEvent>) => Effect.Effect<Option.Option<number>>
  /**
   * One write per step: the step's checkpoint with its events (its step-complete, then the next
   * step's step-start or the execution's end), and the ending when there is one.
   */
  readonly advance: (
    claim: Claim,
    checkpoint: Checkpoint,
    events: ReadonlyArray<WorkflowEvent>,
    ending?: Ending
  ) => Effect.Effect<Option.Option<number>>
  readonly retry: (claim: Claim, state: RetryState, event: WorkflowEvent) => Effect.Effect<Option.Option<number>>
  /** running → completed or error without a checkpoint (a failing step), with the event. */
  readonly finish: (claim: Claim, ending: Ending, event: WorkflowEvent) => Effect.Effect<Option.Option<number>>
  /**
   * running at `atStep` → suspended at `suspension.stepIndex`, with the event; the version moves on,
   * so the claim is spent.
   */
  readonly suspend: (
    claim: Claim & { readonly atStep: number },
    suspension: Suspension,
    event: WorkflowEvent
  ) => Effect.Effect<Option.Option<number>>
  /**
   * suspended → running at `stepIndex` with `resumeData`, owned by `owner`, only from the version the
   * caller read; the claimed row.
   */
  readonly claimResume: (
    execution: Execution,
    resume: {
      readonly stepIndex: number
      readonly resumeData: unknown
      readonly owner: string
      readonly definitionHash: string
    }
  ) => Effect.Effect<Option.Option<Execution>>
  /**
   * A held execution moved to the step at `stepIndex` of the definition with `definitionHash` (its
   * workflow changed: the same step at another index); false when the claim is lost.
   */
  readonly rebase: (
    claim: Claim,
    to: { readonly stepIndex: number; readonly definitionHash: string }
  ) => Effect.Effect<boolean>
  /**
   * Running executions nobody runs any more, taken by `owner` (the version moves on, so a previous
   * owner's writes are refused): those with no owner, or whose owner is not among `liveOwners` (a
   * query of instance ids); all but `owner`'s own when no such query is given (a single instance
   * starting). Rows another claimer holds are skipped, so each is taken by exactly one. Never `owner`'s
   * own: what this process claimed (those a previous process with its id left: `releaseLeftBy`).
   */
  readonly claimOrphans: (
    owner: string,
    options: { readonly limit: number; readonly liveOwners?: Statement.Fragment | undefined }
  ) => Effect.Effect<ReadonlyArray<Execution>>
  /** A held execution given up (shutting down): running with no owner, at a new version, for another instance to take. */
  readonly release: (claim: Claim) => Effect.Effect<boolean>
  /**
   * What a previous process with the instance id `owner` left running, released (no owner, a new
   * version) for the orphan claim: at start-up, before this process claims anything. The number released.
   */
  readonly releaseLeftBy: (owner: string) => Effect.Effect<number>
  /** Who holds each of these executions now (those that exist). */
  readonly holders: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Holder>>
  /** running or suspended → cancelled, with the event; none when it had already ended. */
  readonly cancel: (id: string, event: WorkflowEvent) => Effect.Effect<Option.Option<number>>
  /** A finished execution deleted with its events and Idempotency-Keys, in one transaction; false when it is not finished (or gone). */
  readonly remove: (id: string) => Effect.Effect<boolean>
  /** The events after `afterSeq`, in order; the first `limit` of them when given. */
  readonly events: (id: string, afterSeq: number, limit?: number) => Effect.Effect<ReadonlyArray<StoredEvent>>
  /** The next page of events after `afterSeq` (up to `toSeq`, at most `limit`, when given) by bytes (EventPages.ts); empty when there is none. */
  readonly eventPage: (
    id: string,
    afterSeq: number,
    toSeq?: number,
    limit?: number
  ) => Effect.Effect<ReadonlyArray<StoredEvent>>
  /** The top-level events of each of these executions (an inner step's, with a path, are read by page with `events`). */
  readonly eventsOf: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<StoredEvent>>>
  readonly list: (query: ExecutionQuery) => Effect.Effect<ReadonlyArray<ExecutionListing>>
  /**
   * The replays of each of these executions (issue #33), newest first, at most MAX_REPLAYS_SHOWN each;
   * only `userId`'s (null: those without one) when given.
   */
  readonly replaysOf: (
    ids: ReadonlyArray<string>,
    userId?: string | null
  ) => Effect.Effect<ReadonlyMap<string, ReadonlyArray<Replay>>>
}>() {}
