import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Layer, Schedule } from "effect"
import type { RecordRetentionSettings } from "../config/ServerConfig.js"
import {
  approvalRecords,
  conversationMessages,
  finishedExecutions,
  historyEntries,
  prune,
  workingMemoryRecords
} from "./pruning.js"

export interface PruneCounts {
  readonly executions: number
  readonly messages: number
  readonly historyEntries: number
  readonly workingMemory: number
  readonly approvals: number
}

/**
 * Applies the retention of finished workflow executions (with their events and Idempotency-Keys) and
 * of agent memory and history (config `retention`), in the background and in small batches. Running
 * and suspended executions are never touched. Every instance on a shared store prunes; the deletes
 * are idempotent, so two passes at once only repeat some work.
 */
export class RecordRetention extends Context.Tag("RecordRetention")<RecordRetention, {
  /** One pass now (`now`: the time the ages are measured from, for tests); how many rows went. */
  readonly pruneNow: (now?: number) => Effect.Effect<PruneCounts>
}>() {}

export interface RecordRetentionOptions {
  /** The pause between passes (5 minutes); the first pass runs this long after start, or after 10 s if sooner. */
  readonly every?: Duration.DurationInput
}

export const RecordRetentionLive = (settings: RecordRetentionSettings, options: RecordRetentionOptions = {}) =>
  Layer.scoped(
    RecordRetention,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const every = Duration.decode(options.every ?? "5 minutes")

      const pruneNow = (now = Date.now()) =>
        Effect.gen(function*() {
          const executions = yield* prune(sql, finishedExecutions, settings.executions, { now })
          const messages = yield* prune(sql, conversationMessages, settings.conversations, { now })
          const entries = yield* prune(sql, historyEntries, settings.conversations, { now })
          const workingMemory = yield* prune(sql, workingMemoryRecords, settings.conversations, { now })
          const approvals = yield* prune(sql, approvalRecords, settings.conversations, { now })
          return { executions, messages, historyEntries: entries, workingMemory, approvals }
        }).pipe(Effect.orDie, Effect.withSpan("RecordRetention.prune", { captureStackTrace: false }))

      // Suspended, so that every pass reads the clock (a pass built once measured every age from start-up).
      yield* Effect.suspend(() => pruneNow()).pipe(
        Effect.tap((counts) =>
          counts.executions + counts.messages + counts.historyEntries + counts.workingMemory + counts.approvals === 0
            ? Effect.void
            : Effect.logInfo(
              `retention: deleted ${counts.executions} finished executions, ${counts.messages} conversation messages, ${counts.historyEntries} history entries, ${counts.workingMemory} working memory records and ${counts.approvals} tool approvals`
            )
        ),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("could not apply the retention of executions and conversations", cause)
        ),
        Effect.repeat(Schedule.spaced(every)),
        Effect.delay(Duration.min(every, Duration.seconds(10))),
        // Passes are not traced: a span every few minutes with a statement span per batch is noise.
        Effect.withTracerEnabled(false),
        Effect.forkScoped
      )

      return RecordRetention.of({ pruneNow })
    })
  )
