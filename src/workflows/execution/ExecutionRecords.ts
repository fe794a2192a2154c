import { Effect, Exit, Option, Stream } from "effect"
import { canSee, EVERYONE, type Visibility } from "../../auth/Ownership.js"
import { NotFound, TooManyRequests } from "../../core/errors.js"
import type * as S from "../api/WorkflowSchemas.js"
import { pagedEvents } from "./EventPages.js"
import type { ExecutionListing, ExecutionQuery, ExecutionStore } from "./ExecutionStore.js"
import { eventRecordOf, recordOf, replayLinksOf, waitingOf } from "./ExecutionViews.js"
import { LISTING_WHOLE_BYTES } from "./StoredValues.js"

type ExecutionRecord = typeof S.ExecutionRecord.Type

/** Where the whole record of an execution is read. */
export const recordPath = (id: string) => `/workflows/executions/${encodeURIComponent(id)}`

/**
 * An execution whose events are over LISTING_WHOLE_BYTES, as a listing shows it: no input, output or
 * events, and where its whole record is.
 */
const summaryOf = (execution: ExecutionListing): ExecutionRecord => ({
  id: execution.id,
  workflowId: execution.workflowId,
  workflowName: execution.workflowName,
  status: execution.status,
  metadata: execution.metadata,
  events: [],
  createdAt: execution.createdAt,
  updatedAt: execution.updatedAt,
  ...waitingOf(execution),
  ...replayLinksOf(execution),
  truncated: { historyBytes: execution.historyBytes ?? 0, limit: LISTING_WHOLE_BYTES, record: recordPath(execution.id) }
})

/** A record by id as it is sent: the record without its events, and its events read a page at a time as the response takes them. */
export interface RecordRead {
  readonly record: ExecutionRecord
  /** Read a page at a time as they are pulled; the read's slot is given back when the stream ends, however it ends. */
  readonly events: Stream.Stream<typeof S.ExecutionEventRecord.Type>
  /** Gives the slot back without reading the events (a HEAD, whose body is never read); once, whichever comes first. */
  readonly release: Effect.Effect<void>
}

/**
 * Execution records (GET /workflows/executions and /workflows/executions/:executionId): a page of
 * records holds each whole only while its events are within LISTING_WHOLE_BYTES, so a page's size is
 * bounded whatever the executions hold; a record by id is whole, its events read by page (EventPages.ts)
 * as the client takes them, at most `readsPerOwner` of them in flight per reader (issue #42).
 */
export const makeExecutionRecords = (store: ExecutionStore["Type"], readsPerOwner: number) => {
  const reading = new Map<string, number>()
  /** Takes one of `reader`'s slots; false when all are taken (checked and taken in one step: JavaScript runs it whole). */
  const take = (reader: string) => {
    const held = reading.get(reader) ?? 0
    if (held >= readsPerOwner) return false
    reading.set(reader, held + 1)
    return true
  }
  const give = (reader: string) => {
    const held = (reading.get(reader) ?? 1) - 1
    if (held <= 0) reading.delete(reader)
    else reading.set(reader, held)
  }
  const busy = new TooManyRequests({
    message: `Too many record reads: at most ${readsPerOwner} whole execution records are sent at a time per caller ` +
      `(workflows.recordReadsPerOwner, WORKFLOW_RECORD_READS_PER_OWNER); try again when one has been sent`
  })

  return {
    list: (query: ExecutionQuery) =>
      Effect.gen(function*() {
        const executions = yield* store.list({ ...query, wholeBytes: LISTING_WHOLE_BYTES })
        const whole = executions.filter((e) => (e.historyBytes ?? 0) <= LISTING_WHOLE_BYTES)
        const events = yield* store.eventsOf(whole.map((e) => e.id))
        // Replays the reader may see: those of the user the listing is filtered to.
        const replays = yield* store.replaysOf(whole.map((e) => e.id), query.userId)
        return executions.map((execution) =>
          (execution.historyBytes ?? 0) <= LISTING_WHOLE_BYTES
            ? recordOf(execution, events.get(execution.id) ?? [], replays.get(execution.id))
            : summaryOf(execution)
        )
      }),

    /** `reader`: whose reads count together (the caller). Its slot is given back when the events stream ends, however it ends. */
    record: (
      executionId: string,
      visibility: Visibility = EVERYONE,
      reader = ""
    ): Effect.Effect<RecordRead, NotFound | TooManyRequests> =>
      Effect.uninterruptibleMask((restore) =>
        !take(reader)
          ? Effect.fail<NotFound | TooManyRequests>(busy)
          : restore(Effect.gen(function*() {
            const found = yield* store.get(executionId)
            if (Option.isNone(found) || !canSee(visibility, found.value.userId)) {
              return yield* NotFound.of("Execution", executionId)
            }
            const execution = found.value
            const replays = yield* store.replaysOf([executionId], visibility.all ? undefined : visibility.userId)
            return {
              record: recordOf(execution, [], replays.get(executionId)),
              events: Stream.map(pagedEvents(store, executionId, 0), eventRecordOf)
            }
          })).pipe(
            Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => give(reader))),
            Effect.map((read): RecordRead => {
              let given = false
              const release = Effect.sync(() => {
                if (!given) give(reader)
                given = true
              })
              return { ...read, events: Stream.ensuring(read.events, release), release }
            })
          )
      )
  }
}
