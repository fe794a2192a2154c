import { Effect, Option } from "effect"
import { canSee, EVERYONE, type Visibility } from "../auth/Ownership.js"
import { BadRequest, NotFound } from "../core/errors.js"
import type { ExecutionListing, ExecutionQuery, ExecutionStore } from "./ExecutionStore.js"
import { recordOf, replayLinksOf, waitingOf } from "./ExecutionViews.js"
import { formatBytes, LISTING_WHOLE_BYTES, MAX_HISTORY_BYTES } from "./StoredValues.js"
import type * as S from "./WorkflowSchemas.js"

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

/**
 * Execution records (GET /workflows/executions and /workflows/executions/:executionId): a page of
 * records holds each whole only while its events are within LISTING_WHOLE_BYTES, so a page's size is
 * bounded whatever the executions hold; a record by id is whole (up to MAX_HISTORY_BYTES).
 */
export const makeExecutionRecords = (store: ExecutionStore["Type"]) => ({
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

  record: (executionId: string, visibility: Visibility = EVERYONE) =>
    Effect.gen(function*() {
      const found = yield* store.get(executionId)
      if (Option.isNone(found) || !canSee(visibility, found.value.userId)) return yield* NotFound.of("Execution", executionId)
      const execution = found.value
      const bytes = execution.historyBytes ?? 0
      if (bytes > MAX_HISTORY_BYTES) {
        // Only rows stored before the bound (migration 0018) can be this large.
        return yield* new BadRequest({
          message: `Execution ${executionId}'s events are ${formatBytes(bytes)}, over the ${formatBytes(MAX_HISTORY_BYTES)} a record shows whole: ` +
            `read them from GET /workflows/${execution.workflowId}/executions/${executionId}/stream`
        })
      }
      const replays = yield* store.replaysOf([executionId], visibility.all ? undefined : visibility.userId)
      return recordOf(execution, yield* store.events(executionId, 0), replays.get(executionId))
    })
})
